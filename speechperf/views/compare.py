"""``compare`` and ``compare --best`` (``compare-best``), from their document alone (docs/results.md, "Views").

The console: a hyperfine-style block per cell, the ranking ("a ran 2.31 ± 0.12 times faster than b"), a table with
everything, the parity, quality and environment lines under it, the cost against input length, then the pinned
stages and what the ranking compares; with ``--best`` the search's table first. Markdown and CSV: one row per cell
(``COLUMNS``), Markdown with the search under it. The HTML page: the table (its key columns first), the Summary
sentences and the search; its plots those of ``--plot`` (``speechperf.views.compare_plots``).

Each cell's figures the console prints unrounded (mean ± σ, range, percentiles, outliers) are computed again from
the raw timings the document keeps (``runs[].timings``), as ``speechperf.compare.summary`` computed them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from speechperf import stats, tables
from speechperf.results import Document
from speechperf.results.figures import ROOFLINE_COLUMNS
from speechperf.store.html import table_html
from speechperf.views import Shown, View, rows_csv, rows_markdown
from speechperf.views.cells import first_call_cell, roofline_cell
from speechperf.views.compare_cells import CellRuns, cells

UNIT_NOTE = (
    "statistical unit: one process run (the mean per-sample runtime of the run); mean ± σ, range, ratios "
    "and Welch's p are over the runs; median / p90 / p99 over every sample of every run"
)
#: a cell's headline quality metric -> its figure's name in the rows (speechperf.results.figures: WER and
#: agreement as fractions, BLEU in points)
QUALITY_FIGURES = {"WER": "wer", "BLEU": "bleu", "ASR-BLEU": "bleu", "agreement": "agreement"}
COLUMNS = (
    "cell",
    "backend",
    "threads",
    "params",
    "runs_ok",
    "runs_failed",
    "mean_ms",
    "stdev_ms",
    "min_ms",
    "max_ms",
    "median_ms",
    "p90_ms",
    "p99_ms",
    "batch_size",
    "batch_latency_mean_ms",
    "samples_per_s",
    "audio_s_per_s",
    "first_call_new_shape_extra",
    "first_call_new_shape_detected",
    "rtf",
    "rtf_audio",
    "peak_rss_mib",
    "gflops_per_sample",
    "flops_source",
    *ROOFLINE_COLUMNS,
    "ratio",
    "ratio_sigma",
    "speedup_vs_1t",
    "efficiency",
    "p_value",
    "parity",
    "batch_parity",
    "quality",
    "quality_metric",
    *dict.fromkeys(QUALITY_FIGURES.values()),
    "quality_vs_reference",
    "failure",
)
#: The columns a reader needs first, on the HTML page (every column is in the details block and the exports).
KEY_COLUMNS = (
    "cell",
    "mean_ms",
    "stdev_ms",
    "p90_ms",
    "rtf",
    "peak_rss_mib",
    "gflops_per_sample",
    "ratio",
    "p_value",
    "parity",
    "quality",
)
SEARCH_COLUMNS = ("backend", "variant", "what", "mean_ms", "stdev_ms", "cold_start_s", "parity", "status")
SEARCH_HEADERS = ("backend", "variant", "mean ± σ (ms)", "cold start (s)", "parity", "status")
#: an outlier must also be this far from the median (steady runs have a tiny MAD; see stats.outliers)
OUTLIER_MIN_RELATIVE = 0.10
ENV_KEYS_THAT_MUST_MATCH = ("python", "platform", "cpu", "cpu_count", "device", "packages", "git_commit")


def outlier_warning(label: str, run_values: Sequence[float], runs: Sequence[Mapping[str, Any]]) -> str | None:
    """Outliers among a cell's run values, or among its per-sample runtimes each divided by that sample's median
    over the runs (samples differ in length, so their raw times are not comparable with each other); ``runs``:
    each finished run's raw timings (``per_sample_s``)."""
    found = stats.outlier_warning(run_values, f"{label}: run means", OUTLIER_MIN_RELATIVE)
    if found:
        return found
    by_sample: dict[str, list[float]] = {}
    for run in runs:
        for sid, seconds in run["per_sample_s"].items():
            by_sample.setdefault(sid, []).append(seconds)
    relative = [v / statistics.median(vs) for vs in by_sample.values() if statistics.median(vs) > 0 for v in vs]
    return stats.outlier_warning(relative, f"{label}: per-sample runtimes across runs", OUTLIER_MIN_RELATIVE)


def environment_differences(environments: Sequence[Mapping[str, Any]]) -> list[str]:
    """What differs between the children's environments besides backend and threads (should be nothing)."""
    seen: dict[str, set[str]] = {}
    for env in environments:
        for key in ENV_KEYS_THAT_MUST_MATCH:
            seen.setdefault(key, set()).add(json.dumps(env.get(key), sort_keys=True))
    return [
        f"{key} differs between runs: {' / '.join(sorted(values))}" for key, values in seen.items() if len(values) > 1
    ]


def _ms(seconds: float | None) -> str:
    return stats.mean_sigma(None if seconds is None else seconds * 1e3, None, "ms")


def _rankings(doc: Document) -> list[list[dict[str, Any]]]:
    return [list(ranking) for ranking in doc.get("comparisons") or ()]


def _vs_fastest(doc: Document, label: str) -> str:
    """The table's ratio, written by the same formatter as the Summary sentences (``1.69 ± 0.28x``)."""
    rankings = _rankings(doc)
    if any(ranking and ranking[0]["fast"] == label for ranking in rankings):
        return "fastest"
    found = next((c for ranking in rankings for c in ranking if c["slow"] == label), None)
    return "-" if found is None else stats.Ratio(found["ratio"], found["sigma"]).text() + "x"


def quality_text(quality: Mapping[str, Any] | None) -> str | None:
    if quality is None:
        return None
    differs = quality.get("differs")
    return " ".join(p for p in (quality.get("headline"), f"[{differs}]" if differs else None) if p) or "-"


def table_warnings(doc: Document, found: Sequence[CellRuns]) -> list[str]:
    """The lines under the table: parity mismatches, quality that differs from the reference's and quality notes,
    differing environments."""
    rows = {c.label: c.row for c in found}
    lines = [
        f"parity MISMATCH: {label} against {p['reference']}: {rows.get(label, {}).get('parity')}"
        for label, p in (doc.get("parity") or {}).items()
        if p.get("mismatch")
    ]
    lines += [
        f"batch parity MISMATCH: {label} {rows.get(label, {}).get('batch_parity')}"
        for label, p in (doc.get("batch_parity") or {}).items()
        if p.get("mismatch")
    ]
    for label, q in (doc.get("quality") or {}).items():
        if q.get("differs"):
            lines.append(f"quality {q['differs']}")
        if q.get("note"):
            lines.append(f"quality: {label}: {q['note']}")
    environments = [run.get("environment") or {} for c in found for run in c.finished]
    return lines + [f"warning: the children's environments differ: {n}" for n in environment_differences(environments)]


def warnings(doc: Document) -> list[str]:
    """Every warning the console prints (a cell's outliers in its block, then those under the table)."""
    found = cells(doc)
    outliers = [
        f"{c.label}: Warning: {w}" for c in found if c.ok and (w := outlier_warning(c.label, c.run_values, c.timings))
    ]
    return outliers + table_warnings(doc, found)


def _cell_block(c: CellRuns) -> list[str]:
    values = c.run_values
    lines = [
        f"\nCell: {c.label} ({len(values)} of {len(values) + len(c.failures)} runs finished, {c.threads} thread(s))"
    ]
    if not c.ok:
        lines.append("  no run finished")
    else:
        mean = c.mean * 1e3 if c.mean is not None else None
        time = stats.mean_sigma(mean, None if c.stdev is None else c.stdev * 1e3, "ms")
        time += " (one run: no σ)" if c.stdev is None else ""
        lines.append(f"  Time (mean ± σ):     {time}")
        lines.append(f"  Range (min … max):   {_ms(min(values))} … {_ms(max(values))}    {len(values)} runs")
        lines.append(
            f"  Per sample:          median {_ms(c.percentile(50))}, p90 {_ms(c.percentile(90))}, "
            f"p99 {_ms(c.percentile(99))}    {len(c.per_sample)} sample timings"
        )
    for failure in c.failures:
        lines.append(
            f"  run {failure['run'] + 1} FAILED: {failure.get('reason')} (exit code {failure.get('exit_code')}; "
            f"stderr: {failure.get('stderr_path')})"
        )
    if c.ok and (warning := outlier_warning(c.label, values, c.timings)):
        lines.append(f"  Warning: {warning}")
    return lines


def report_text(doc: Document) -> str:
    """The ranking's report, in hyperfine's layout: a block per cell, then the ranking, then a table with
    everything, parity and failures."""
    found = cells(doc)
    lines: list[str] = [doc.get("statistical_unit") or UNIT_NOTE]
    for c in found:
        lines += _cell_block(c)
    for ranking in _rankings(doc):
        if ranking:
            lines.append("\nSummary")
            lines += [f"  {c['sentence']}" for c in ranking]
    scaling = any(c.row.get("speedup_vs_1t") is not None for c in found)
    headers = (
        "cell",
        "runs ok/failed",
        "mean ± σ (ms)",
        "median",
        "p90",
        "p99",
        "batch",
        "ms/batch",
        "samples/s",
        "audio s/s",
        "1st call, new shape",
        "RTF",
        "peak RSS (MiB)",
        "GFLOPs/sample",
        "GFLOP/s (roofline)",
        "vs fastest",
        *(("speed-up", "efficiency") if scaling else ()),
        "parity",
        "quality",
    )
    quality = doc.get("quality") or {}
    table = []
    for c in found:
        row = c.row
        mean = None if c.mean is None else c.mean * 1e3
        table.append(
            (
                row["cell"],
                f"{row['runs_ok']}/{row['runs_failed']}",
                stats.mean_sigma(mean, None if c.stdev is None else c.stdev * 1e3),  # unrounded, like the ratio
                *(row.get(k) for k in ("median_ms", "p90_ms", "p99_ms")),
                *(row.get(k) for k in ("batch_size", "batch_latency_mean_ms", "samples_per_s", "audio_s_per_s")),
                first_call_cell(row),
                *(row.get(k) for k in ("rtf", "peak_rss_mib", "gflops_per_sample")),
                roofline_cell(row),
                _vs_fastest(doc, c.label),
                *((row.get("speedup_vs_1t"), row.get("efficiency")) if scaling else ()),
                "; ".join(p for p in (row.get("parity"), row.get("batch_parity")) if p) or None,
                quality_text(quality.get(c.label)),
            )
        )
    # A column no cell has a value in (FLOPs not counted, no quality scored) only takes width from the others.
    keep = [i for i, h in enumerate(headers) if i < 3 or any(row[i] not in (None, "-", "") for row in table)]
    shown = tuple(headers[i] for i in keep)
    table = [tuple(row[i] for i in keep) for row in table]
    lines.append("")
    lines.append(
        tables.render_table("speechperf compare", shown, table, left=("cell", "parity", "quality")).rstrip("\n")
    )
    lines += table_warnings(doc, found)
    for c in found:
        for name, fit in c.length_fits.items() if c.ok else ():
            lines.append(f"cost against input length, {c.label}, {name}: {fit.text()}")
    return "\n".join(lines) + "\n"


def search_text(best: Mapping[str, Any]) -> str:
    """compare --best's search table, as it printed it."""
    rows = [
        (
            r["backend"],
            r["variant"],
            stats.mean_sigma(r.get("mean_ms"), r.get("stdev_ms")),
            None if r.get("cold_start_s") is None else f"{r['cold_start_s']:.2f}",
            r.get("parity"),
            r.get("status"),
        )
        for r in best.get("search") or ()
    ]
    title = (
        f"compare --best: the search ({best.get('runs_per_variant')} run(s) per variant, "
        f"{best.get('elapsed_s') or 0:.0f} s of {best.get('budget_s') or 0:.0f} s)"
    )
    return tables.render_table(title, SEARCH_HEADERS, rows, left=("backend", "variant", "parity", "status"))


def winners_found(doc: Document) -> bool:
    """False for a --best that found no winner: its document is the search alone."""
    best = doc.get("best")
    return best is None or bool(best.get("winners")) or bool(doc.rows)


def console(doc: Document, how: Shown) -> str:
    parts = []
    if doc.get("best"):
        parts.append(search_text(doc["best"]))
    if winners_found(doc):
        parts.append(report_text(doc))
        if doc.get("pinned"):
            parts.append(doc["pinned"] + "\n")
        if doc.get("default_paths"):  # a note the document keeps without its prefix, as every note
            parts.append(f"note: {doc['default_paths']}\n")
    return "".join(parts)


def markdown(doc: Document) -> str:
    text = rows_markdown(doc, COLUMNS)
    if doc.get("best"):
        search = doc["best"].get("search") or ()
        text += "\n## compare --best: the search\n\n"
        text += tables.to_markdown(SEARCH_COLUMNS, ([r.get(c) for c in SEARCH_COLUMNS] for r in search))
    return text


def csv(doc: Document) -> str:
    return rows_csv(doc, COLUMNS)


def model_type(doc: Document) -> str | None:
    return ((doc.config or {}).get("general") or {}).get("model_type")


def title(doc: Document) -> str:
    return f"speechperf compare: {model_type(doc)}"


def html_tables(doc: Document) -> list[str]:
    out = []
    if winners_found(doc):
        sentences = [c["sentence"] for ranking in _rankings(doc) for c in ranking]
        out += [
            table_html(f"compare: {model_type(doc)}", COLUMNS, doc.rows, key=KEY_COLUMNS),
            table_html("Summary", ("summary",), [{"summary": s} for s in sentences]),
        ]
    if doc.get("best"):
        out.append(table_html("compare --best: the search", SEARCH_COLUMNS, doc["best"].get("search") or []))
    return out


def plots(doc: Document, folder: Path) -> list[Path]:
    from speechperf.views import compare_plots

    return compare_plots.draw_for_page(doc, folder)


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title, plots=plots)
