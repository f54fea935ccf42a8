"""What ``compare --scenario`` prints and exports: the ranking table (one row per cell, VALID / INVALID, "not
MLPerf-compliant" when shortened), the reasons and compliance notes under it; JSON, CSV and Markdown as compare's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from speechperf import tables
from speechperf.compare.serving import METRIC, ServingOptions, ServingRow

SCHEMA_VERSION = 1
COLUMNS = (
    "rank",
    "cell",
    "backend",
    "threads",
    "scenario",
    "result",
    "metric",
    "value",
    "vs_best",
    "percentile",
    "latency_ms",
    "target_latency_ms",
    "rtfx",
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
    return None if value is None else round(value, digits)


def row_dict(row: ServingRow, opts: ServingOptions) -> dict[str, Any]:
    return {
        "rank": row.rank,
        "cell": row.label,
        "backend": row.backend,
        "threads": row.threads,
        "scenario": opts.scenario,
        "result": row.result,
        "metric": METRIC[opts.scenario][0],
        "value": _r(row.metric),
        "vs_best": _r(row.vs_best, 3),
        "percentile": row.percentile,
        "latency_ms": _r(row.latency_ms),
        "target_latency_ms": opts.target_latency_ms if opts.scenario == "Server" else None,
        "rtfx": _r(row.rtfx),
        "samples": row.samples,
        "trials": row.trials,
        "lower_bound": row.lower_bound if opts.scenario == "Server" else None,
        "mlperf": "not MLPerf-compliant" if row.compliance else ("compliant" if row.trials else None),
        "unmet": "; ".join(row.unmet) or None,
        "compliance": "; ".join(row.compliance) or None,
        "pid": row.pid,
        "failure": None if row.ok else f"{row.reason} (exit code {row.exit_code})",
    }


def to_json(
    rows: Sequence[ServingRow], opts: ServingOptions, config: dict | None, options: dict, complete: bool
) -> dict[str, Any]:
    name, header, higher = METRIC[opts.scenario]
    return {
        "schema_version": SCHEMA_VERSION,
        "complete": complete,
        "scenario": opts.scenario,
        "ranked_by": {"metric": name, "label": header, "higher_is_better": higher},
        "options": options,
        "scenario_options": attrs.asdict(opts),
        "config": config,
        "summary": [row_dict(r, opts) for r in rows],
        "rows": [attrs.asdict(r) for r in rows],
    }


def to_csv(rows: Sequence[ServingRow], opts: ServingOptions) -> str:
    return tables.to_csv(COLUMNS, [row_dict(r, opts) for r in rows])


def to_markdown(rows: Sequence[ServingRow], opts: ServingOptions) -> str:
    return tables.to_markdown(COLUMNS, [[row_dict(r, opts)[c] for c in COLUMNS] for r in rows])


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
                d["value"],
                vs,
                d["latency_ms"],
                d["rtfx"],
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
        if opts.scenario == "Server" and row.metric is None and row.trials:
            lines.append(f"{row.label}: no VALID rate found within the budget ({pct} <= {opts.target_latency_ms:g} ms)")
        if row.lower_bound:
            lines.append(
                f"{row.label}: peak {row.metric:.2f} QPS is a lower bound: no trial above it was INVALID "
                "before the budget ended the search (a longer --budget brackets it)"
            )
        lines += [f"{row.label} {row.result}: {reason}" for reason in row.unmet]
        lines += [f"{row.label}: {note}" for note in row.compliance]
        if not row.ok:
            lines.append(f"{row.label}: FAILED: {row.reason} (exit code {row.exit_code}; logs: {row.log_dir})")
    return "\n".join(lines) + "\n"
