"""What ``compare --scenario`` prints and exports: the ranking table (one row per cell, VALID / INVALID, "not
MLPerf-compliant" when shortened), the reasons and compliance notes under it; the ``serving`` result document
(docs/results.md) that the exports write (``speechperf.exports``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from speechperf import tables
from speechperf.compare.serving import METRIC, ServingOptions, ServingRow
from speechperf.results import Document
from speechperf.tables import significant

#: the columns before and after the scenario's figures (``columns``)
HEAD = ("rank", "cell", "backend", "threads", "scenario", "result", "metric")
TAIL = (
    "target_latency_ms",
    "target_qps",
    "audio_s_per_s",
    "samples",
    "trials",
    "lower_bound",
    "mlperf",
    "unmet",
    "compliance",
    "pid",
    "failure",
)


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
    figures = dict.fromkeys((figure_name(opts), "vs_best", "percentile", latency_name(opts)))
    return (*HEAD, *figures, *TAIL)


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


def render(rows: Sequence[ServingRow], opts: ServingOptions) -> str:
    _, header, higher = METRIC[opts.scenario]
    pct = f"p{opts.latency_percentile:g}"
    where = f" at the peak (<= {opts.target_latency_ms:g} ms)" if opts.scenario == "Server" else ""
    headers = (
        "rank",
        "cell",
        "result",
        header,
        "vs best",
        f"{pct} (ms){where}",
        "RTFx",
        "samples",
        *(("trials",) if opts.scenario == "Server" else ()),
        "MLPerf",
        "pid",
    )
    table = []
    for row in rows:
        d = row_dict(row, opts)
        vs = None if row.vs_best is None else ("best" if row.rank == 1 else f"{row.vs_best:.2f}x")
        table.append(
            (
                d["rank"],
                d["cell"],
                d["result"] + ("" if row.complete else " (partial)"),
                d[figure_name(opts)],
                vs,
                d[latency_name(opts)],
                d["audio_s_per_s"],
                d["samples"],
                *((d["trials"],) if opts.scenario == "Server" else ()),
                d["mlperf"],
                d["pid"],
            )
        )
    title = (
        f"speechperf compare --scenario {opts.scenario}: ranked by {header}, {'higher' if higher else 'lower'} first"
    )
    lines = [tables.render_table(title, headers, table, left=("cell", "result", "MLPerf")).rstrip("\n")]
    for row in rows:
        if opts.scenario == "Server" and row.metric is None and (row.trials or row.stopped):
            lines.append(
                f"{row.label}: no VALID rate found ({pct} <= {opts.target_latency_ms:g} ms)"
                + (f": {row.stopped}" if row.stopped else " within the budget")
            )
        if opts.scenario == "Server" and row.metric is not None:
            bound = (
                " is a lower bound: no faster trial missed the latency bound before the search ended "
                "(a longer --budget brackets it)"
                if row.lower_bound
                else ""
            )
            lines.append(
                f"{row.label}: peak {significant(row.metric)} scheduled samples/s (LoadGen's){bound}; "
                f"target {significant(row.target_qps) if row.target_qps is not None else '-'} QPS"
            )
        lines += [f"{row.label} {row.result}: {reason}" for reason in row.unmet]
        lines += [f"{row.label}: {note}" for note in row.compliance]
        if not row.ok:
            lines.append(f"{row.label}: FAILED: {row.reason} (exit code {row.exit_code}; logs: {row.log_dir})")
    return "\n".join(lines) + "\n"
