"""``compare --scenario``'s ``serving`` result document (docs/results.md): one row per cell, figures named as in
``speechperf.results.figures``, and every field of each cell's child; ``speechperf.views.serving`` renders the
console's ranking table, the exports and the HTML page from it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from speechperf.compare.serving import METRIC, ServingOptions, ServingRow
from speechperf.results import Document
from speechperf.views import serving as view


def _r(value: float | None, digits: int = 2) -> float | None:
    """Rounded to ``digits`` decimals, or more where that keeps 3 significant figures (0.0551 stays 0.0551)."""
    if value is None:
        return None
    if value and math.isfinite(value):
        digits = max(digits, 2 - math.floor(math.log10(abs(value))))
    return round(value, digits)


def latency_name(opts: ServingOptions) -> str:
    """The latency percentile's figure name (speechperf.results.figures): ``p90_ms``, ``p99_ms``."""
    return f"p{opts.latency_percentile:g}_ms"


def figure_name(opts: ServingOptions) -> str:
    """The figure the scenario ranks by: ``peak_qps``, ``samples_per_s`` or its latency percentile."""
    name = METRIC[opts.scenario][0]
    return latency_name(opts) if name == "latency_ms" else name


def columns(opts: ServingOptions) -> tuple[str, ...]:
    """The rows' columns: the ranking figure, then the latency percentile (once when it is the figure)."""
    return view.columns(figure_name(opts), opts.latency_percentile)


def row_dict(row: ServingRow, opts: ServingOptions) -> dict[str, Any]:
    """One cell's row, its figures named as in ``speechperf.results.figures``."""
    out: dict[str, Any] = {
        "rank": row.rank,
        "cell": row.label,
        "backend": row.backend,
        "threads": row.threads,
        "scenario": opts.scenario,
        "result": row.result,
        "metric": figure_name(opts),
        figure_name(opts): _r(row.metric),
        "vs_best": _r(row.vs_best, 3),
        "percentile": row.percentile,
        latency_name(opts): _r(row.latency_ms),
        "target_latency_ms": opts.target_latency_ms if opts.scenario == "Server" else None,
        "target_qps": _r(row.target_qps) if opts.scenario == "Server" else None,
        "audio_s_per_s": _r(row.rtfx),
        "samples": row.samples,
        "trials": row.trials,
        "lower_bound": row.lower_bound if opts.scenario == "Server" else None,
        "mlperf": "not MLPerf-compliant" if row.compliance else ("compliant" if row.trials else None),
        "unmet": "; ".join(row.unmet) or None,
        "compliance": "; ".join(row.compliance) or None,
        "pid": row.pid,
        "failure": None if row.ok else f"{row.reason} (exit code {row.exit_code})",
    }
    return {c: out[c] for c in columns(opts)}


def document(
    rows: Sequence[ServingRow], opts: ServingOptions, config: dict | None, options: dict, complete: bool
) -> Document:
    """The ``serving`` result document: the display rows; ``results`` every field of each cell's row (as
    version 1's ``rows``, which speechperf.results.upgrade moves there)."""
    _, header, higher = METRIC[opts.scenario]
    return Document(
        kind="serving",
        config=config,
        rows=[row_dict(r, opts) for r in rows],
        complete=complete,
        body={
            "scenario": opts.scenario,
            "ranked_by": {"metric": figure_name(opts), "label": header, "higher_is_better": higher},
            "options": options,
            "scenario_options": attrs.asdict(opts),
            "results": [attrs.asdict(r) for r in rows],
        },
    )
