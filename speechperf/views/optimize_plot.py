"""``optimize --plot FILE.png`` (and its --html): the trade-off post-training quantization is about, the quality a
variant keeps against what it buys, in two panels of one figure: quality against speed-up over fp32, and quality
against file size as a share of fp32's. fp32 is the star at (1, its quality); the quality budget
(``--max-wer-increase``, ``--max-bleu-drop``, ``--min-agreement``) is the dashed line a variant must stay on the
good side of. When a variant was pruned (``optimize --sparsity``), a third panel has quality against the compressed
(zip) size as a share of fp32's, and each method's sparsity sweep is a dotted line through its levels in every
panel, so the cost of each step of sparsity reads off the curve.

The quality is the first of these the run scored: WER (%), BLEU, token or VAD agreement with fp32 (%), SNR against
fp32's waveforms (dB), the graphs' max relative difference. matplotlib runs with the Agg backend, so no display is
needed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.extras import require
from speechperf.outputs import check_figure_path, save_figure

FP32 = "fp32"
#: The gid of the budget line in each panel (what a test or a reader of the SVG finds it by).
BUDGET_GID = "quality-budget"


def check_plot_path(path: Path) -> None:
    """Before any work: the file type, the path (as every output, speechperf.outputs), matplotlib installed."""
    check_figure_path(path, "--plot")
    require("matplotlib", "--plot")


@attrs.frozen
class Quality:
    """The quality axis: its label, each row's value on it (None where the row has none) and the budget line."""

    label: str
    values: dict[str, float | None]
    budget: float | None  #: where the line goes, None when no budget applies to this figure
    budget_label: str  #: the line's legend, or why there is no line


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None  # a failed variant, or fp32's SNR against itself ("inf" in the JSON)
    return float(value)


def quality_of(rows: Sequence[Mapping[str, Any]], budget: Mapping[str, Any]) -> Quality | None:
    """The quality figure this run scored and the budget line on it; None when no row has one."""
    by_name = {r["variant"]: r for r in rows}

    def column(key: str, scale: float = 1.0) -> dict[str, float | None]:
        return {name: (None if (v := _finite(r.get(key))) is None else v * scale) for name, r in by_name.items()}

    if any(_finite(r.get("wer")) is not None for r in rows):
        values, rise = column("wer", 100.0), budget.get("max_wer_increase")
        base = values.get(FP32)
        line = None if base is None or rise is None else base + rise
        return Quality("WER (%), lower is better", values, line, f"budget: fp32 WER + {rise} points")
    if any(_finite(r.get("bleu")) is not None for r in rows):
        values, drop = column("bleu"), budget.get("max_bleu_drop")
        base = values.get(FP32)
        line = None if base is None or drop is None else base - drop
        return Quality("BLEU, higher is better", values, line, f"budget: fp32 BLEU - {drop} points")
    kinds = {r.get("fidelity_kind") for r in rows if _finite(r.get("agreement_or_snr")) is not None}
    if kinds & {"tokens", "vad"}:
        kind = "token" if "tokens" in kinds else "VAD"
        least = budget.get("min_agreement")
        line = None if least is None else 100.0 * least
        label = f"budget: agreement >= {100 * least:g}%" if least is not None else "no --min-agreement: no budget line"
        return Quality(f"{kind} agreement with fp32 (%)", column("agreement_or_snr", 100.0), line, label)
    if "snr" in kinds:
        return Quality("SNR against fp32 (dB), higher is better", column("agreement_or_snr"), None, "no budget on SNR")
    if "graphs" in kinds:
        label = "graphs' max relative difference to fp32"
        return Quality(label, column("agreement_or_snr"), None, "no budget on the graph difference")
    return None


def tradeoff_figure(rows: Sequence[Mapping[str, Any]], budget: Mapping[str, Any], title: str):
    """The figure (matplotlib), or None when the run scored no quality figure."""
    quality = quality_of(rows, budget)
    if quality is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("speedup", "speed-up over fp32 (x, higher is faster)"), ("size_ratio", "size / fp32 size")]
    if any(_finite(r.get("compressed_ratio")) is not None for r in rows if r["variant"] != FP32):
        panels.append(("compressed_ratio", "compressed (zip) size / fp32's"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), sharey=True)
    for ax, (key, xlabel) in zip(axes, panels):
        _sweeps(ax, rows, quality, key)
        for row in rows:
            name = row["variant"]
            x, y = (1.0 if name == FP32 else _finite(row.get(key))), quality.values.get(name)
            if x is None or y is None:
                continue  # failed, not measured, or no quality figure
            sigma = _finite(row.get("speedup_sigma")) if key == "speedup" and name != FP32 else None
            if name == FP32:
                ax.plot([x], [y], marker="*", markersize=16, color="black", linestyle="none", label="fp32")
            else:  # the speed-up's sigma as an error bar: a ratio of two noisy means
                ax.errorbar([x], [y], xerr=None if sigma is None else [sigma], marker="o", markersize=8, capsize=3)
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(6, 6), fontsize=8)
        if quality.budget is not None:
            ax.axhline(quality.budget, color="tab:red", linestyle="--", label=quality.budget_label, gid=BUDGET_GID)
        ax.axvline(1.0, color="grey", linewidth=0.6)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    axes[0].set_ylabel(quality.label)
    fig.suptitle(title if quality.budget is not None else f"{title}\n({quality.budget_label})")
    return fig


#: The gid prefix of a sparsity sweep's line (``sparsity-sweep:prune-l1-global``).
SWEEP_GID = "sparsity-sweep"


def sweeps(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The pruned rows of each method (``prune-l1-global@0.3+ort-dynamic`` is of ``prune-l1-global+ort-dynamic``),
    in order of their measured sparsity; only methods run at two levels or more."""
    by_method: dict[str, list] = {}
    for row in rows:
        if _finite(row.get("sparsity")) is not None and "@" in row["variant"]:
            head, _, tail = row["variant"].partition("@")
            method = head + ("+" + tail.partition("+")[2] if "+" in tail else "")
            by_method.setdefault(method, []).append(row)
    return {m: sorted(r, key=lambda row: row["sparsity"]) for m, r in by_method.items() if len(r) > 1}


def _sweeps(ax, rows, quality: Quality, key: str) -> None:
    """Each sparsity sweep as a line through its levels, in the order of their sparsity."""
    for method, levels in sweeps(rows).items():
        xy = [(_finite(r.get(key)), quality.values.get(r["variant"])) for r in levels]
        xy = [(x, y) for x, y in xy if x is not None and y is not None]
        if len(xy) > 1:
            ax.plot(*zip(*xy), linestyle=":", color="grey", linewidth=1, gid=f"{SWEEP_GID}:{method}")


def plot_tradeoff(rows: Sequence[Mapping[str, Any]], budget: Mapping[str, Any], path: Path, title: str) -> Path | None:
    """Draw the trade-off into ``path``; None (nothing written) when the run scored no quality figure."""
    fig = tradeoff_figure(rows, budget, title)
    return None if fig is None else save_figure(fig, path, "--plot")
