"""One name per figure across every kind of result document, with its unit (docs/results.md is this table).

The JSON keeps fractions (a WER of 0.062, not 6.2) and milliseconds for latencies; percents are for display only
(``shown``). A new figure is added here first, then used under this name by every command that has it.
"""

from __future__ import annotations

import math
from typing import Any

import attrs


@attrs.frozen
class Figure:
    name: str
    unit: str  #: "ms", "s", "fraction", "points", "MiB", "1/s", "ratio", ...
    meaning: str
    #: how the console and the exports for reading show it: "percent" multiplies a fraction by 100
    display: str = "plain"
    digits: int = 3


FIGURES: tuple[Figure, ...] = (
    Figure("mean_ms", "ms", "mean per-sample runtime (latency) over the timed samples"),
    Figure("stdev_ms", "ms", "standard deviation of the per-sample runtime (or of the run means, for compare)"),
    Figure("median_ms", "ms", "median per-sample runtime"),
    Figure("p50_ms", "ms", "LoadGen: 50th percentile of the query latency, queueing included", digits=2),
    Figure("p90_ms", "ms", "90th percentile of the per-sample runtime (LoadGen: of the query latency)"),
    Figure("p99_ms", "ms", "99th percentile of the per-sample runtime (LoadGen: of the query latency)"),
    Figure("p99.9_ms", "ms", "LoadGen: 99.9th percentile of the query latency, queueing included", digits=2),
    Figure("min_ms", "ms", "fastest run"),
    Figure("max_ms", "ms", "slowest run"),
    Figure("rtf", "ratio", "real-time factor: processing seconds per second of audio", digits=5),
    Figure("samples_per_s", "1/s", "samples processed per second"),
    Figure("audio_s_per_s", "ratio", "seconds of audio processed per second (RTFx)"),
    Figure("peak_rss_mib", "MiB", "peak resident memory of the process while timing", digits=1),
    Figure("gflops_per_sample", "GFLOP", "floating-point operations per sample, in 10^9"),
    Figure("wer", "fraction", "word error rate after the scorer's normalizer", display="percent", digits=4),
    Figure("cer", "fraction", "character error rate after the scorer's normalizer", display="percent", digits=4),
    Figure("bleu", "points", "corpus BLEU (sacrebleu, 0-100)", digits=2),
    Figure("chrf", "points", "corpus chrF (sacrebleu, 0-100)", digits=2),
    Figure(
        "dnsmos_ovrl", "MOS", "DNSMOS P.835 overall quality (speechmos, 1-5), mean over the speech outputs", digits=2
    ),
    Figure("dnsmos_sig", "MOS", "DNSMOS P.835 speech signal quality (speechmos, 1-5)", digits=2),
    Figure("dnsmos_bak", "MOS", "DNSMOS P.835 background noise quality (speechmos, 1-5)", digits=2),
    Figure("dnsmos_p808", "MOS", "DNSMOS P.808 overall quality (speechmos, 1-5)", digits=2),
    Figure(
        "mcd_db",
        "dB",
        "mel-cepstral distortion against a reference waveform, DTW-aligned (mel-cepstral-distance; 0: identical)",
        digits=2,
    ),
    Figure("pesq", "MOS-LQO", "wide-band PESQ against a clean reference (pesq, 1-4.64)", digits=2),
    Figure("stoi", "fraction", "STOI against a clean reference (pystoi, 0-1)", digits=3),
    Figure("mos_drop", "MOS", "optimize: fp32's DNSMOS OVRL less this variant's", digits=2),
    Figure("min_snr_db", "dB", "optimize: the lowest SNR of a float output against fp32's", digits=1),
    Figure("speedup", "ratio", "fp32 latency over this variant's latency"),
    Figure("peak_qps", "1/s", "Server scenario: the highest scheduled query rate of a VALID run"),
    Figure(
        "scheduled_qps", "1/s", "LoadGen: the query rate LoadGen issued (Server: the Poisson rate reached)", digits=2
    ),
    Figure(
        "completed_qps",
        "1/s",
        "LoadGen: the query rate the system under test completed (MLPerf's Server figure, a peak's too)",
        digits=2,
    ),
    Figure(
        "early_stopping_ms",
        "ms",
        "LoadGen SingleStream / MultiStream: early stopping's estimate of the latency percentile (MLPerf's figure)",
        digits=2,
    ),
    Figure("bracket_low_qps", "1/s", "Server peak search: the highest VALID target rate", digits=2),
    Figure("bracket_high_qps", "1/s", "Server peak search: the lowest target rate that missed the bound", digits=2),
    Figure("size_mb", "MB", "model file size, in 10^6 bytes"),
    Figure("batch_latency_mean_ms", "ms", "mean latency of one forward of a padded batch (batch size 1: the sample's)"),
    Figure("batch_latency_p90_ms", "ms", "90th percentile of the batch latency"),
    Figure("footprint_mib", "MiB", "peak RSS less the RSS before the model was loaded", digits=1),
    Figure("load_s", "s", "seconds to load the stage's sessions (cold start)"),
    Figure("first_call_s", "s", "seconds of the first call on the first input (cold start)"),
    Figure(
        "first_call_new_shape_extra",
        "fraction",
        "extra cost of a first call on a new input shape over the later calls (0.44: 44% more)",
        display="percent",
    ),
    Figure("gflops_per_s", "GFLOP/s", "achieved: analytic FLOPs over runtime", digits=2),
    Figure("fraction_of_peak", "fraction", "achieved GFLOP/s over the machine's compute roof", display="percent"),
    Figure(
        "fraction_of_attainable", "fraction", "achieved over the roofline's bound at this intensity", display="percent"
    ),
    Figure("arithmetic_intensity", "FLOP/byte", "FLOPs over the lower bound of bytes moved", digits=2),
    Figure("traffic_mib_per_sample", "MiB", "lower bound of bytes moved per sample (feeds, outputs, weights)"),
    Figure("ratio", "ratio", "compare: this cell's mean over the fastest cell's (its sigma: ratio_sigma)"),
    Figure("new_over_base", "ratio", "diff: NEW's figure over BASE's (above 1: NEW is higher)"),
    Figure("p_value", "probability", "Welch's two-sided t-test over the statistical units", digits=4),
    Figure(
        "worse_low",
        "ratio",
        "diff: the gate's lower 95% confidence bound of how many times worse the gated figure is (the units' spread "
        "and the between-session drift allowed for)",
    ),
    Figure("speedup_vs_1t", "ratio", "compare --threads 1,N: the 1-thread mean over this cell's"),
    Figure("efficiency", "fraction", "speed-up over 1 thread divided by the thread count", display="percent"),
    Figure("agreement", "fraction", "token or VAD-segment agreement with the reference cell", display="percent"),
    Figure("size_ratio", "ratio", "optimize: the variant's file size over fp32's"),
    Figure("compressed_mb", "MB", "optimize: the files deflated as a zip ships them, in 10^6 bytes"),
    Figure("compressed_ratio", "ratio", "optimize: the variant's compressed size over fp32's"),
    Figure("sparsity", "fraction", "optimize: share of the pruned layers' weights zero or removed", display="percent"),
    Figure(
        "model_sparsity", "fraction", "optimize: share of all the model's weights zero or removed", display="percent"
    ),
    Figure(
        "parity_max_rel_diff",
        "ratio",
        "optimize: a pruned graph against the pruned weights on the backend that pruned them",
        digits=6,
    ),
    Figure("target_qps", "1/s", "LoadGen: the query rate asked for", digits=2),
    Figure("target_latency_ms", "ms", "LoadGen Server: the latency bound", digits=0),
    Figure("ms_per_step", "ms", "profile: milliseconds per profiled step spent in an op category"),
    Figure("share", "fraction", "profile: the category's share of the step", display="percent"),
)
BY_NAME = {f.name: f for f in FIGURES}
#: The roofline's figures of a row, in their order (``speechperf.meters.roofline`` fills them; the views show them).
ROOFLINE_COLUMNS = (
    "gflops_per_s",
    "fraction_of_peak",
    "traffic_mib_per_sample",
    "arithmetic_intensity",
    "roof_bound",
    "fraction_of_attainable",
)

#: Version 1's names of the figures above, per kind (``speechperf.results.upgrade``).
V1_NAMES: dict[str, dict[str, str]] = {
    "bench": {
        "runtime_mean_ms": "mean_ms",
        "runtime_stdev_ms": "stdev_ms",
        "runtime_median_ms": "median_ms",
        "runtime_p90_ms": "p90_ms",
    },
    "optimize": {"latency_ms": "mean_ms", "latency_sigma_ms": "stdev_ms"},
    "compare": {"batch_latency_ms": "batch_latency_mean_ms"},
    "compare-best": {"batch_latency_ms": "batch_latency_mean_ms"},
}
#: Version 1's figures kept in percent (now fractions), per kind, by their version 2 name.
V1_PERCENT: dict[str, frozenset[str]] = {"bench": frozenset({"wer", "cer"})}
#: Version 2's figures in percent -> their version 3 names, fractions (wherever they sit in a document: rows, a
#: compare's ``roofline.per_stage``, a bench result's stages).
V2_PERCENT: dict[str, str] = {
    "pct_of_peak": "fraction_of_peak",
    "pct_of_attainable": "fraction_of_attainable",
    "first_call_new_shape_pct": "first_call_new_shape_extra",
}


def upgrade_row(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    names = V1_NAMES.get(kind, {})
    percent = V1_PERCENT.get(kind, frozenset())
    out = {}
    for key, value in row.items():
        key = names.get(key, key)
        if key in percent and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = value / 100
        out[key] = value
    return out


def shown(name: str, value: Any) -> str:
    """A figure as the console and the reports show it: rounded, percent for a fraction, "-" when missing."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    figure = BY_NAME.get(name)
    if figure is None:
        return f"{value:.4g}" if isinstance(value, float) else str(value)
    if figure.display == "percent":
        return f"{value * 100:.{max(figure.digits - 2, 0)}f}%"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{figure.digits}f}"


def reference_table() -> str:
    """The Markdown table of every figure (docs/results.md holds it; a test checks the two agree)."""
    lines = ["| figure | unit | shown as | meaning |", "|---|---|---|---|"]
    for f in FIGURES:
        how = "percent" if f.display == "percent" else f"{f.digits} decimals"
        lines.append(f"| `{f.name}` | {f.unit} | {how} | {f.meaning} |")
    return "\n".join(lines) + "\n"


def unit_of(name: str) -> str | None:
    """The unit of the figure named ``name`` (``ms``, ``1/s``, ``MiB``, ...); None for a name that is no figure."""
    figure = BY_NAME.get(name)
    return figure.unit if figure is not None else None
