"""``compare --scenario`` (``serving``), from its document alone (docs/results.md, "Views"): the ranking table (one
row per cell, VALID / INVALID, "not MLPerf-compliant" when shortened), the reasons and compliance notes under it;
the rows as they are for Markdown and CSV; the latency percentiles' plot on the HTML page.

The document keeps each cell's row for the table (``rows``), every field of each cell's child (``results``) and
the options every child got (``scenario_options``); nothing else is read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from speechperf import tables
from speechperf.extras import MissingExtraError, require
from speechperf.outputs import save_figure
from speechperf.results import Document
from speechperf.store.html import table_html
from speechperf.tables import significant
from speechperf.views import Shown, View, row_columns, rows_csv, rows_markdown

log = logging.getLogger(__name__)

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


def latency_name(percentile: float) -> str:
    """The latency percentile's figure name (speechperf.results.figures): ``p90_ms``, ``p99_ms``."""
    return f"p{percentile:g}_ms"


def columns(figure: str, percentile: float) -> tuple[str, ...]:
    """The rows' columns: the ranking figure, then the latency percentile (once when it is the figure)."""
    figures = dict.fromkeys((figure, "vs_best", "percentile", latency_name(percentile)))
    return (*HEAD, *figures, *TAIL)


def _options(doc: Document) -> dict[str, Any]:
    return dict(doc.get("scenario_options") or {})


def percentile_of(doc: Document) -> float | None:
    """The latency percentile every child reported: --percentile, else the scenario's MLPerf one."""
    opts = _options(doc)
    found = opts.get("percentile") if opts.get("percentile") is not None else opts.get("mlperf_percentile")
    if found is None and doc.rows:  # a document written before the options kept the MLPerf percentile
        found = doc.rows[0].get("percentile")
    return found


def doc_columns(doc: Document) -> tuple[str, ...]:
    figure = (doc.get("ranked_by") or {}).get("metric")
    percentile = percentile_of(doc)
    if figure is None or percentile is None:
        return row_columns(doc.rows)
    return columns(figure, percentile)


def title(doc: Document) -> str:
    model = ((doc.config or {}).get("general") or {}).get("model_type")
    return f"speechperf compare --scenario {doc.get('scenario')}: {model}"


def console(doc: Document, how: Shown) -> str:
    opts = _options(doc)
    scenario = doc.get("scenario")
    ranked = doc.get("ranked_by") or {}
    header, higher, figure = ranked.get("label"), ranked.get("higher_is_better"), ranked.get("metric")
    percentile = percentile_of(doc)
    pct = "p-" if percentile is None else f"p{percentile:g}"
    latency = None if percentile is None else latency_name(percentile)
    server = scenario == "Server"
    target = opts.get("target_latency_ms")
    where = f" at the peak (<= {target:g} ms)" if server and target is not None else ""
    headers = (
        "rank",
        "cell",
        "result",
        header,
        "vs best",
        f"{pct} (ms){where}",
        "RTFx",
        "samples",
        *(("trials",) if server else ()),
        "MLPerf",
        "pid",
    )
    results = list(doc.get("results") or ())
    table = []
    for i, d in enumerate(doc.rows):
        raw: Mapping[str, Any] = results[i] if i < len(results) else {}
        vs_best = d.get("vs_best")
        vs = None if vs_best is None else ("best" if d.get("rank") == 1 else f"{raw.get('vs_best', vs_best):.2f}x")
        table.append(
            (
                d.get("rank"),
                d.get("cell"),
                (d.get("result") or "") + ("" if raw.get("complete", True) else " (partial)"),
                d.get(figure) if figure else None,
                vs,
                d.get(latency) if latency else None,
                d.get("audio_s_per_s"),
                d.get("samples"),
                *((d.get("trials"),) if server else ()),
                d.get("mlperf"),
                d.get("pid"),
            )
        )
    heading = f"speechperf compare --scenario {scenario}: ranked by {header}, {'higher' if higher else 'lower'} first"
    lines = [tables.render_table(heading, headers, table, left=("cell", "result", "MLPerf")).rstrip("\n")]
    for raw in results:
        lines += _under(raw, server, pct, target)
    return "\n".join(lines) + "\n"


def _under(row: Mapping[str, Any], server: bool, pct: str, target: float | None) -> list[str]:
    """The lines under the table for one cell: its Server peak, the unmet constraints, compliance, the failure."""
    label, metric = row.get("label"), row.get("metric")
    bound = f"{pct} <= {target:g} ms" if target is not None else pct
    lines = []
    if server and metric is None and (row.get("trials") or row.get("stopped")):
        stopped = row.get("stopped")
        lines.append(f"{label}: no VALID rate found ({bound})" + (f": {stopped}" if stopped else " within the budget"))
    if server and metric is not None:
        lower = (
            " is a lower bound: no faster trial missed the latency bound before the search ended "
            "(a longer --budget brackets it)"
            if row.get("lower_bound")
            else ""
        )
        qps = row.get("target_qps")
        lines.append(
            f"{label}: peak {significant(metric)} scheduled samples/s (LoadGen's){lower}; "
            f"target {significant(qps) if qps is not None else '-'} QPS"
        )
    lines += [f"{label} {row.get('result')}: {reason}" for reason in row.get("unmet") or ()]
    lines += [f"{label}: {note}" for note in row.get("compliance") or ()]
    if not row.get("ok", True):
        lines.append(
            f"{label}: FAILED: {row.get('reason')} (exit code {row.get('exit_code')}; logs: {row.get('log_dir')})"
        )
    return lines


def markdown(doc: Document) -> str:
    return rows_markdown(doc, doc_columns(doc))


def csv(doc: Document) -> str:
    return rows_csv(doc, doc_columns(doc))


def html_tables(doc: Document) -> list[str]:
    return [table_html(title(doc), doc_columns(doc), doc.rows)]


def plots(doc: Document, folder: Path) -> list[Path]:
    """The latency percentiles: per cell, each percentile LoadGen reported (p50 ... p99.9) of the run behind its
    figure (Server: at the peak), latency on a log axis; none when no cell has any, or without matplotlib."""
    measured = [r for r in doc.get("results") or () if r.get("percentiles_ms")]
    if not measured:
        return []
    try:
        matplotlib = require("matplotlib", "the plots of --html")
    except MissingExtraError:
        log.info("note: the HTML page has no plots: matplotlib is not installed (pip install speechperf[plot])")
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for row in measured:
        points = sorted((float(k.lstrip("p")), v) for k, v in row["percentiles_ms"].items() if v is not None)
        ax.plot(range(len(points)), [v for _, v in points], marker="o", label=f"{row['label']} ({row['result']})")
        ax.set_xticks(range(len(points)), [f"p{q:g}" for q, _ in points])
    ax.set_yscale("log")
    ax.set_xlabel("latency percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"{title(doc)}: latency percentiles")
    ax.grid(alpha=0.3)
    ax.legend()
    return [save_figure(fig, folder / "percentiles.png", "--html plot")]


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title, plots=plots)
