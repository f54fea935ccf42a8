"""``loadgen``'s table rows, made from its runs as the document keeps them (``runs``: one dict per LoadGen test,
the same in version 1 and 2), so that ``speechperf loadgen`` and the upgrade of a version 1 file (which had no
rows) give the same rows, figures named as in ``speechperf.results.figures``.

One row per LoadGen test, its ``headline`` MLPerf's figure as the current submission checker reads it (Server:
completed samples/s; SingleStream / MultiStream: early stopping's latency estimate, ``early_stopping_ms``); a Server
peak search adds a ``peak`` row: the best VALID trial's figures, with ``completed_qps`` its completed samples per
second (MLPerf's Server figure), ``peak_qps`` its scheduled samples per second and ``target_qps`` the rate it was
asked for (or no figures when no rate was VALID), and the search's bracket in target rates (``bracket_low_qps``:
the highest VALID, ``bracket_high_qps``: the lowest that missed the bound) with ``converged``. Its trials carry their
number in ``trial``.
"""

from __future__ import annotations

import math
from typing import Any

from speechperf.tables import significant

COLUMNS = (
    "scenario",
    "mode",
    "trial",
    "backend",
    "instances",
    "threads",
    "result",
    "headline",
    "early_stopping_ms",
    "target_qps",
    "peak_qps",
    "bracket_low_qps",
    "bracket_high_qps",
    "converged",
    "scheduled_qps",
    "completed_qps",
    "samples_per_s",
    "audio_s_per_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p99.9_ms",
    "samples",
    "trials",
    "unmet",
    "compliance",
)
#: The row of a peak search's result: its ``mode``.
PEAK = "peak"


def _r(value: Any, digits: int = 2) -> float | None:
    """Rounded to ``digits`` decimals, or more where that keeps 3 significant figures (0.0551 stays 0.0551)."""
    if value is None:
        return None
    value = float(value)
    if value and math.isfinite(value):
        digits = max(digits, 2 - math.floor(math.log10(abs(value))))
    return round(value, digits)


def run_row(run: dict[str, Any], trial: int | None = None) -> dict[str, Any]:
    """One LoadGen test's row (``run``: the document's form of ``speechperf.loadgen.report.LoadgenRun``)."""
    s = run.get("summary") or {}
    pct = s.get("percentiles_ms") or {}
    row = {
        "scenario": run.get("scenario"),
        "mode": run.get("mode"),
        "trial": trial,
        "backend": run.get("backend"),
        "instances": run.get("instances"),
        "threads": run.get("threads"),
        "result": s.get("result"),
        "headline": s.get("headline"),
        "early_stopping_ms": _r(s.get("early_stopping_ms")),
        "target_qps": _r(run.get("target_qps")),
        "peak_qps": None,
        "bracket_low_qps": None,
        "bracket_high_qps": None,
        "converged": None,
        "scheduled_qps": _r(s.get("scheduled_qps")),
        "completed_qps": _r(s.get("completed_qps")),
        "samples_per_s": _r(s.get("samples_per_s")),
        "audio_s_per_s": _r(run.get("rtfx")),
        "p50_ms": _r(pct.get("p50")),
        "p90_ms": _r(pct.get("p90")),
        "p99_ms": _r(pct.get("p99")),
        "p99.9_ms": _r(pct.get("p99.9")),
        "samples": run.get("samples"),
        "trials": None,
        "unmet": "; ".join(s.get("unmet") or ()) or None,
        "compliance": "; ".join(run.get("compliance") or ()) or None,
    }
    return row


def rows(runs: list[dict[str, Any]], peak: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every test's row, and with ``peak`` (the peak search's result) its trials numbered and the peak row last."""
    if peak is None:
        return [run_row(run) for run in runs]
    out = [run_row(run, trial=i + 1) for i, run in enumerate(runs)]
    at = peak.get("peak_qps")
    index = peak.get("peak_trial")
    if index is not None:
        best = out[index - 1] if 0 < index <= len(out) else None
    else:  # version 1: the peak was the target rate of a VALID trial
        best = next(
            (r for r in reversed(out) if at is not None and r["target_qps"] == _r(at) and r["result"] == "VALID"), None
        )
    first = out[0] if out else {}
    row = dict(best) if best is not None else {k: first.get(k) for k in ("scenario", "backend", "instances", "threads")}
    row = {c: row.get(c) for c in COLUMNS}
    low, high = (list(peak.get("bracket") or ()) + [None, None])[:2]
    row.update(
        mode=PEAK,
        trial=None,
        result="VALID" if at is not None else "NO VALID RATE",
        headline=peak_headline(peak) if at is not None else "no VALID rate",
        peak_qps=_r(at),
        bracket_low_qps=_r(low),
        bracket_high_qps=_r(high),
        converged=peak.get("converged"),
        trials=peak.get("trials"),
        unmet=None,
    )
    if peak.get("completed_qps") is not None:
        row["completed_qps"] = _r(peak["completed_qps"])
    return [*out, row]


def bound_words(peak: dict[str, Any]) -> str:
    """What a peak search that did not converge gives: a lower bound (no faster trial missed the bound), or a
    bracket (the peak lies between its highest VALID and lowest missed target rates); empty when it converged or
    (a version 1 or 2 file) did not say."""
    low, high = (list(peak.get("bracket") or ()) + [None, None])[:2]
    if peak.get("lower_bound"):
        return "a lower bound"
    if peak.get("converged") is False and low is not None and high is not None:
        return f"not converged: between {significant(low)} VALID and {significant(high)} INVALID QPS"
    return ""


def peak_headline(peak: dict[str, Any]) -> str:
    """The peak row's headline: MLPerf's figure (completed samples/s; a version 2 file: the scheduled rate)."""
    completed = peak.get("completed_qps")
    figure = f"{significant(completed)} completed" if completed is not None else significant(peak["peak_qps"])
    bound = bound_words(peak)
    return f"peak {figure} samples/s" + (f" ({bound})" if bound else "")
