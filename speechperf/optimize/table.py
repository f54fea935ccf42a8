"""The optimize table: one row per variant (fp32 first), the rows of its result document (``kind: optimize``);
speechperf.views.optimize shows them.

Latency is the benchmark's total runtime per sample (mean over the dataset) of each process run; the row shows the
mean ± sample standard deviation of those per-run values, and the speed-up is ``fp32 mean / variant mean`` with the
propagated sigma and Welch's p-value (speechperf.stats): one value per independent process is the statistical unit.
Peak memory is the median over runs of the run's peak RSS during one forward (MiB, absolute; see
docs/architecture.md, "Measurements"). The figures carry their shared names (speechperf.results.figures): ``mean_ms``
and ``stdev_ms`` for the latency, ``wer`` / ``cer`` as fractions, ``bleu`` in points, ``size_mb``, ``speedup``,
``peak_rss_mib``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from speechperf import stats
from speechperf.optimize.fidelity import Fidelity


@attrs.define
class Row:
    variant: str
    status: str
    size_bytes: int | None = None
    fp32_bytes: int | None = None
    latencies_ms: list[float] = attrs.Factory(list)
    speedup: float | None = None
    speedup_sigma: float | None = None
    p_value: float | None = None
    peak_mib: float | None = None
    fidelity: Fidelity | None = None
    graph_rel_diff: float | None = None
    notes: list[str] = attrs.Factory(list)
    #: every float output of every stage against fp32 over the dataset (speechperf.compare.parity.OutputDiff)
    float_outputs: list = attrs.Factory(list)
    #: per stage, (index, speechperf.optimize.fp32_ops.OpShares or why they are missing)
    fp32_ops: list = attrs.Factory(list)
    mos_drop: float | None = None  # fp32's DNSMOS OVRL less this variant's
    min_snr_db: float | None = None  # the lowest SNR of a float output against fp32's
    #: fp32's PESQ and STOI against the clean reference, shown beside a variant's (speech enhancement)
    fp32_pesq_stoi: tuple[float, float] | None = None
    #: the files the stages load, deflated as a zip would ship them (speechperf.optimize.pruning.compressed_size)
    compressed_bytes: int | None = None
    fp32_compressed: int | None = None
    #: a pruned variant's sparsity measured from its weights (speechperf.optimize.pruning.Sparsity)
    sparsity: Any = None
    #: a pruned graph on this backend against the pruned weights on the backend that pruned them: max rel diff
    parity: float | None = None
    parity_text: str | None = None

    def fp32_text(self) -> str | None:
        if not self.fp32_ops:
            return None
        return "; ".join(
            f"stage{i} " + (shares if isinstance(shares, str) else shares.text()) for i, shares in self.fp32_ops
        )

    def fidelity_text(self) -> str | None:
        if self.fidelity is None:
            return None
        if self.fp32_pesq_stoi is None:
            return self.fidelity.text()
        pesq, stoi = self.fp32_pesq_stoi
        return f"{self.fidelity.text()} (fp32 PESQ {pesq:.2f} STOI {stoi:.3f})"

    def float_text(self) -> str | None:
        if not self.float_outputs:
            return None
        return "; ".join(d.describe() for d in self.float_outputs)

    @property
    def mean_ms(self) -> float | None:
        return stats.mean(self.latencies_ms)

    @property
    def stdev_ms(self) -> float | None:
        return stats.stdev(self.latencies_ms)

    @property
    def size_ratio(self) -> float | None:
        if self.size_bytes is None or not self.fp32_bytes:
            return None
        return self.size_bytes / self.fp32_bytes

    def plain(self) -> dict:
        fid = self.fidelity
        return {
            "variant": self.variant,
            "status": self.status,
            "size_mb": _round(self.size_bytes / 1e6, 3) if self.size_bytes is not None else None,
            "size_ratio": _round(self.size_ratio, 3),
            "compressed_mb": _round(self.compressed_bytes / 1e6, 3) if self.compressed_bytes is not None else None,
            "compressed_ratio": _round(
                self.compressed_bytes / self.fp32_compressed
                if self.compressed_bytes and self.fp32_compressed
                else None,
                3,
            ),
            "sparsity": _round(self.sparsity.layers, 4) if self.sparsity is not None else None,
            "model_sparsity": _round(self.sparsity.model, 4) if self.sparsity is not None else None,
            "parity_max_rel_diff": _round(self.parity, 10),
            "parity": self.parity_text,
            "mean_ms": _round(self.mean_ms, 3),
            "stdev_ms": _round(self.stdev_ms, 3),
            "speedup": _round(self.speedup, 3),
            "speedup_sigma": _round(self.speedup_sigma, 3),
            "p_value": _round(self.p_value, 4),
            "runs": len(self.latencies_ms),
            "peak_rss_mib": _round(self.peak_mib, 1),
            "fidelity": self.fidelity_text(),
            "fidelity_kind": fid.kind if fid else None,  # what agreement_or_snr is: tokens, vad, snr, graphs
            "wer": _round(fid.wer, 4) if fid else None,
            "cer": _round(fid.cer, 4) if fid else None,
            "bleu": _round(fid.bleu, 2) if fid else None,
            "normalizer": fid.quality.normalizer if fid and fid.quality else None,
            "agreement_or_snr": _round(fid.value, 4) if fid else None,
            "dnsmos_ovrl": _round(fid.mos, 3) if fid else None,
            "mos_drop": _round(self.mos_drop, 3),
            "mcd_db": _round(fid.mcd_db, 3) if fid else None,
            "pesq": _round(fid.pesq, 3) if fid else None,
            "stoi": _round(fid.stoi, 4) if fid else None,
            "min_snr_db": _round(self.min_snr_db, 2),
            "graph_max_rel_diff": _round(self.graph_rel_diff, 5),
            "float_outputs": self.float_text(),
            "fp32_ops": self.fp32_text(),
        }


def _round(value, digits):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None if value is None or math.isnan(value) else ("inf" if value > 0 else "-inf")
    return round(value, digits)
