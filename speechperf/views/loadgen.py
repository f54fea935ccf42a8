"""``loadgen``'s view: the console table with the lines under it, the Markdown, CSV and HTML tables, from the
document alone (its ``rows``, made by ``speechperf.results.loadgen_table``, and its ``runs``, ``peak``,
``quality`` and ``scenario_options``), so that ``speechperf show`` prints what ``speechperf loadgen`` printed.

The lines under the table (``lines``) are the document's notes too: each unmet condition (a peak search's with its
trial number), the compliance notes once (those of the peak search's best trial, or else the last test), the MLPerf
files applied and the per-stage times of that test, the peak search's line, then accuracy mode's lines.
"""

from __future__ import annotations

from typing import Any

from speechperf import tables
from speechperf.results import Document, figures, loadgen_table
from speechperf.store.html import table_html
from speechperf.tables import significant
from speechperf.views import Shown, View, rows_csv, rows_markdown

#: The console's columns (the exports have every column of ``loadgen_table.COLUMNS``; ``--wide`` shows those that
#: hold a value), with their short two-line headers: within ``tables.FIT`` columns.
TABLE = (
    "backend",
    "scenario",
    "result",
    "headline",
    "samples_per_s",
    "audio_s_per_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "samples",
)
SHORT = {
    "samples_per_s": "samples\n/s",
    "audio_s_per_s": "RTFx",
    "p50_ms": "p50\n(ms)",
    "p90_ms": "p90\n(ms)",
    "p99_ms": "p99\n(ms)",
}
#: The console's text columns, left-aligned.
TEXT = ("backend", "scenario", "mode", "result", "headline", "unmet", "compliance")


def _runs(doc: Document) -> list[dict[str, Any]]:
    return [run for run in doc.get("runs") or () if isinstance(run, dict)]


def _peak(doc: Document) -> dict[str, Any] | None:
    peak = doc.get("peak")
    return peak if isinstance(peak, dict) else None


def run_notes(runs: list[dict[str, Any]], chosen: int | None = None) -> list[str]:
    """Each unmet condition of every test (numbered as trials when there are several), then the compliance notes,
    the MLPerf files applied and the per-stage times of the ``chosen`` test (a peak search's best trial), or else
    of the last one: once, not once per trial."""
    lines = []
    for n, run in enumerate(runs, 1):
        summary = run.get("summary") or {}
        trial = f"trial {n}: " if len(runs) > 1 else ""
        lines += [f"{trial}{run.get('scenario')} {summary.get('result')}: {why}" for why in summary.get("unmet") or ()]
    for run in runs[chosen : chosen + 1] if chosen is not None else runs[-1:]:
        scenario = run.get("scenario")
        lines += [f"{scenario}: {note}" for note in run.get("compliance") or ()]
        for name, key in (("user.conf", "user_conf"), ("audit.config", "audit_conf")):
            if run.get(key):
                lines.append(f"{scenario}: {name} {run[key]} applied")
        stages = run.get("stages") or ()
        for stage in stages if len(stages) > 1 else ():
            if stage.get("mean_ms") is not None:
                lines.append(
                    f"{scenario}: stage {stage.get('label')}: mean {stage['mean_ms']:.2f} ms, "
                    f"p90 {stage['p90_ms']:.2f} ms over {stage.get('calls')} call(s) (service time, no queueing)"
                    + (f"; {stage['mean_batch']:.2f} requests a forward" if stage.get("mean_batch") else "")
                )
    return lines


def peak_index(peak: dict[str, Any] | None) -> int | None:
    """The index of a peak search's best VALID trial, whose compliance notes the run's are."""
    trial = (peak or {}).get("peak_trial")
    return trial - 1 if trial else None


def peak_line(peak: dict[str, Any], percentile: float, bound_ms: float) -> str:
    """The peak search's outcome in one line: LoadGen's scheduled rate of the best VALID trial, or why none."""
    pct = f"p{percentile:g}"
    spent = f"{peak.get('trials')} trial(s) in {peak.get('seconds') or 0:.0f} s"
    if peak.get("peak_qps") is None:
        return f"Server peak: no VALID rate found ({pct} <= {bound_ms:g} ms; {spent}): {peak.get('stopped')}"
    bound = loadgen_table.bound_words(peak)
    if bound == "a lower bound":
        bound += ": no faster trial missed the bound"
    latency = peak.get("peak_latency_ms")
    completed = peak.get("completed_qps")
    figure = f"{significant(peak['peak_qps'])} scheduled samples/s (LoadGen's; "  # a version 2 file's figure
    if completed is not None:
        figure = (
            f"{significant(completed)} completed samples/s (MLPerf's figure; scheduled "
            f"{significant(peak['peak_qps'])}, "
        )
    return (
        f"Server peak{f' ({bound})' if bound else ''}: {figure}target "
        f"{significant(peak['target_qps'])} QPS, trial {peak.get('peak_trial')}) VALID at {pct} <= "
        f"{bound_ms:g} ms ({pct} {'-' if latency is None else f'{latency:.1f}'} ms; {spent}; {peak.get('stopped')})"
    )


def _bound(doc: Document, runs: list[dict[str, Any]]) -> tuple[float, float]:
    """(percentile, latency bound in ms) of the Server peak search: its runs' (a version 1 file kept no options)."""
    run = runs[0] if runs else {}
    percentile = run.get("percentile")
    bound = run.get("target_latency_ms")
    options = doc.get("scenario_options") or {}
    if percentile is None:
        percentile = options.get("percentile") or 99.0
    if bound is None:
        bound = options.get("target_latency_ms") or 0.0
    return float(percentile), float(bound)


def lines(doc: Document) -> list[str]:
    """What the console prints under the table (and the document keeps in its notes)."""
    runs, peak = _runs(doc), _peak(doc)
    out = []
    serving = doc.get("serving")
    if isinstance(serving, dict):  # general.serving: stages: how each stage was served, and its batch parity
        for n, how in enumerate(serving.get("stages") or (), 1):
            batching = (
                f", dynamic batches of <= {how['max_batch']} within {how['max_queue_delay_ms']:g} ms"
                if how.get("max_batch", 1) > 1
                else ""
            )
            out.append(f"serving: stage{n}: {how['instances']} instance(s) x {how['threads']} thread(s){batching}")
        out += [str(line) for line in serving.get("batch_parity") or ()]
    out += run_notes(runs, peak_index(peak))
    if peak is not None:
        out.append(peak_line(peak, *_bound(doc, runs)))
    quality = doc.get("quality") or {}
    out += [str(line) for line in quality.get("lines") or ()]
    return out


def console(doc: Document, how: Shown) -> str:
    """The tests' table (a peak search's trials, not its peak row: the peak line says it), the lines under it: the
    key columns within ``tables.FIT`` columns (the headline wraps inside itself), or with ``how.wide`` every column
    that holds a value, as wide as it takes."""
    rows = [row for row in doc.rows if row.get("mode") != loadgen_table.PEAK]
    if how.wide:
        columns = [c for c in loadgen_table.COLUMNS if any(row.get(c) is not None for row in rows)]
        cells = [[figures.shown(c, row.get(c)) for c in columns] for row in rows]
        table = tables.render_table("speechperf loadgen", columns, cells, left=TEXT)
    else:
        headers = [SHORT.get(c, c) for c in TABLE]
        cells = [[figures.shown(c, row.get(c)) for c in TABLE] for row in rows]
        table = tables.render_table(
            "speechperf loadgen", headers, cells, left=TEXT, width=tables.FIT, wrap=("headline",)
        )
    return table + "".join(line + "\n" for line in lines(doc))


def markdown(doc: Document) -> str:
    return rows_markdown(doc, loadgen_table.COLUMNS)


def csv(doc: Document) -> str:
    return rows_csv(doc, loadgen_table.COLUMNS)


def title(doc: Document) -> str:
    runs = _runs(doc)
    scenario = (doc.get("scenario_options") or {}).get("scenario") or (runs[0].get("scenario") if runs else None)
    backend = doc.get("backend") or doc.environment.get("backend")
    return f"speechperf loadgen: {scenario or '-'} on {backend or '-'}"


def html_tables(doc: Document) -> list[str]:
    """Every column, the console's first."""
    return [table_html(title(doc), loadgen_table.COLUMNS, doc.rows, key=TABLE)]


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title)
