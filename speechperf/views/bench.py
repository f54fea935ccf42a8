"""``speechperf bench``'s renderings, from its document alone (``Document(kind="bench")``, docs/results.md).

- the console: by default the columns a reader needs first (stage, model, runtime mean ± σ, p90, RTF, peak RSS,
  GFLOPs, quality), fitted to the terminal's width; ``--wide`` every column, as wide as it takes; a document of
  ``bench --runs N`` (``process_runs`` > 1) shows its runs instead: each run's mean per stage and the load it ran
  under, then the mean ± σ between runs;
- Markdown and CSV: every row in ``COLUMNS``; the HTML page: the rows, key columns first (``HTML_COLUMNS``), each
  figure as the console shows it, and the plots of ``speechperf.views.bench_plots``.

The notes below the table (length fits, cold starts, noise, FLOPs, quality) are logged by the run and kept in the
document's ``notes``: the page shows them, the console's stdout does not.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from speechperf import stats, tables
from speechperf.results import Document
from speechperf.results.figures import ROOFLINE_COLUMNS, shown
from speechperf.store.html import table_html
from speechperf.views import Shown, View, rows_csv, rows_markdown
from speechperf.views.cells import first_call_cell, roofline_cell

#: The speech quality figures of a row (speechperf.meters.speech_quality), by their names in results/figures.py.
SPEECH_COLUMNS = ("dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "mcd_db", "pesq", "stoi")
#: Every column of a row, in the order of the CSV and Markdown exports.
COLUMNS = (
    "backend",
    "stage",
    "model",
    "ok",
    "failed",
    "mean_ms",
    "stdev_ms",
    "median_ms",
    "p90_ms",
    "batch_size",
    "batch_latency_mean_ms",
    "batch_latency_p90_ms",
    "samples_per_s",
    "audio_s_per_s",
    "first_call_new_shape_extra",
    "first_call_new_shape_detected",
    "rtf",
    "rtf_audio",
    "peak_rss_mib",
    "footprint_mib",
    "gflops_per_sample",
    "flops_source",
    *ROOFLINE_COLUMNS,
    "quality",
    "wer",
    "cer",
    "bleu",
    "chrf",
    *SPEECH_COLUMNS,
    # the run's context, so that an exported row stands on its own
    "threads",
    "warmup",
    "repeat",
    "load_s",
    "first_call_s",
    "flops_uncounted",
)
#: The columns a reader needs first: the console's default table (``--wide`` shows every column) and the first
#: columns of the HTML table.
KEY_COLUMNS = (
    "backend",
    "stage",
    "model",
    "mean_ms",
    "stdev_ms",
    "p90_ms",
    "rtf",
    "peak_rss_mib",
    "gflops_per_sample",
    "quality",
)
#: The HTML table's columns: the key ones first, so that they are seen without scrolling.
HTML_COLUMNS = KEY_COLUMNS + tuple(c for c in COLUMNS if c not in KEY_COLUMNS)
#: Whose audio an RTF divides by, in the key columns: a TTS stage's is its output's.
SIDE = {"input": "in", "output": "out"}


def result_of(doc: Document) -> dict[str, Any]:
    """The run's ``result`` (every raw timing; for ``--runs``, run 1's); {} in a document without one."""
    result = doc.get("result")
    return result if isinstance(result, dict) else {}


def process_runs(doc: Document) -> int:
    return int(doc.get("process_runs") or 1)


def hybrid(result: dict[str, Any]) -> bool:
    """Whether some stage ran on another backend than the run's (``stageN.backend``)."""
    return any(s.get("backend") not in (None, result.get("backend")) for s in result.get("stages") or ())


def run_name(doc: Document) -> str:
    """``S2T on onnxruntime``: the model type and the backend."""
    result = result_of(doc)
    model = result.get("model_type") or ((doc.config or {}).get("general") or {}).get("model_type")
    return f"{model} on {result.get('backend') or doc.environment.get('backend')}"


def title(doc: Document) -> str:
    """The page's title: ``speechperf bench: S2T on onnxruntime`` (``bench --runs 3: ...``)."""
    runs = f" --runs {process_runs(doc)}" if process_runs(doc) > 1 else ""
    return f"speechperf bench{runs}: {run_name(doc)}"


def table_title(doc: Document) -> str:
    """The console table's title: what ran where, and how it was measured."""
    r = result_of(doc)
    pinned = ", ".join(
        f"stage{s['index']} on {s['backend']}"
        for s in r.get("stages") or ()
        if s.get("backend") not in (None, r.get("backend"))
    )
    return (
        f"speechperf bench: {r.get('model_type')} on {r.get('backend')}/{r.get('device')}"
        + (f" ({pinned}, pinned)" if hybrid(r) else "")
        + f", {r.get('threads')} thread(s), warmup {r.get('warmup')}"
        + (" and per shape" if r.get("warmup_per_shape") else "")
        + f", repeat {r.get('repeat')}"
        + (f", batch size {r['batch_size']}" if (r.get("batch_size") or 1) > 1 else "")
    )


def console(doc: Document, how: Shown) -> str:
    """The run's table: the key columns fitted to ``how.width``, or every column (``how.wide``); ``--runs``: its
    runs."""
    if process_runs(doc) > 1:
        return runs_console(doc)
    if how.wide:
        headers, cells = wide_cells(doc.rows, hybrid(result_of(doc)))
        return tables.render_table(table_title(doc), headers, cells, left=("stage", "model"))
    headers, cells = key_cells(doc.rows, hybrid(result_of(doc)))
    left, wrap = ("stage", "backend", "model", "quality"), ("model", "quality")
    return tables.render_table(table_title(doc), headers, cells, left=left, width=how.width, wrap=wrap)


def key_cells(rows: list[dict[str, Any]], pinned: bool) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The columns a reader needs first, with short two-line headers; ok/failed only when a sample failed (the
    failures are listed below the table); backend only when some stage was pinned to another."""
    failed = any(row.get("failed") for row in rows)
    headers = (
        "stage",
        *(("backend",) if pinned else ()),
        "model",
        *(("ok/failed",) if failed else ()),
        "runtime (ms)\nmean ± σ",
        "p90\n(ms)",
        "RTF\n(audio)",
        "peak RSS\n(MiB)",
        "GFLOPs\n/sample",
        "quality",
    )
    cells = [
        (
            row.get("stage"),
            *((row.get("backend"),) if pinned else ()),
            row.get("model"),
            *((f"{_cell(row.get('ok'))}/{row.get('failed')}",) if failed else ()),
            stats.mean_sigma(row.get("mean_ms"), row.get("stdev_ms")),
            shown("p90_ms", row.get("p90_ms")),
            _rtf(row, short=True),
            shown("peak_rss_mib", row.get("peak_rss_mib")),
            _gflops(row),
            row.get("quality"),
        )
        for row in rows
    ]
    return headers, cells


def wide_cells(rows: list[dict[str, Any]], pinned: bool) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Every column of the console (``--wide``): runtime mean ± σ, median, p90 (ms), batches, throughput, the first
    call on a new shape, RTF, peak RSS and footprint (MiB), GFLOPs per sample and their roofline, quality."""
    headers = (
        "stage",
        *(("backend",) if pinned else ()),
        "model",
        "ok/failed",
        "runtime (ms) mean ± σ",
        "median",
        "p90",
        "batch",
        "ms/batch",
        "samples/s",
        "audio s/s",
        "1st call, new shape",
        "RTF",
        "peak RSS (MiB)",
        "footprint (MiB)",
        "GFLOPs/sample",
        "GFLOP/s (roofline)",
        "quality",
    )
    cells = [
        (
            row.get("stage"),
            *((row.get("backend"),) if pinned else ()),
            row.get("model"),
            f"{_cell(row.get('ok'))}/{row.get('failed')}",
            stats.mean_sigma(row.get("mean_ms"), row.get("stdev_ms")),
            row.get("median_ms"),
            row.get("p90_ms"),
            row.get("batch_size"),
            row.get("batch_latency_mean_ms"),
            row.get("samples_per_s"),
            row.get("audio_s_per_s"),
            first_call_cell(row),
            _rtf(row, short=False),
            row.get("peak_rss_mib"),
            row.get("footprint_mib"),
            _gflops(row) + (f" ({row.get('flops_source')})" if row.get("gflops_per_sample") is not None else ""),
            roofline_cell(row),
            row.get("quality"),
        )
        for row in rows
    ]
    return headers, cells


def _rtf(row: dict[str, Any], short: bool) -> str:
    """``0.0043 in`` (``short``) or ``0.0043 (input)``: the RTF and whose audio it divides by (a TTS stage's is its
    output's)."""
    if row.get("rtf") is None:
        return "-"
    audio = str(row.get("rtf_audio"))
    return f"{row['rtf']:.4f} {SIDE.get(audio, audio)}" if short else f"{row['rtf']:.4f} ({audio})"


def _gflops(row: dict[str, Any]) -> str:
    return "-" if row.get("gflops_per_sample") is None else f"{row['gflops_per_sample']:.4f}"


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def runs_console(doc: Document) -> str:
    """``bench --runs N``: per run, each stage's and the total's mean per-sample runtime and the load while it timed;
    then the mean ± σ over the runs, the unit ``speechperf diff`` tests over."""
    records = list(doc.get("runs") or ())
    names = list(next((r["per_sample_s"] for r in records if r.get("per_sample_s")), {}))
    headers = ("run", *(f"{n}\nmean (ms)" for n in names), "other processes\n(busy cores)", "busy machine")
    table = []
    for r in records:
        if r.get("per_sample_s") is None:
            failed = [f"FAILED: {r.get('reason')}"] + [""] * (len(names) - 1) if names else []
            table.append((str(r["run"] + 1), *failed, None, "-"))
            continue
        load = r.get("load") or {}
        means = [_mean_ms(r["per_sample_s"].get(n)) for n in names]
        busy = "yes" if load.get("busy") else "no" if load else "-"
        table.append(
            (
                str(r["run"] + 1),
                *(None if m is None else f"{m:.3f}" for m in means),
                load.get("busy_cores_others"),
                busy,
            )
        )
    text = tables.render_table(
        f"speechperf bench: {len(records)} process runs", headers, table, left=("run", "busy machine")
    )
    ok = [r for r in records if r.get("per_sample_s")]
    for n in names:
        values = [m for r in ok if (m := _mean_ms(r["per_sample_s"].get(n))) is not None]
        text += f"{n}: {stats.mean_sigma(stats.mean(values), stats.stdev(values), 'ms')} over {len(values)} runs"
        text += " (σ between runs)\n"
    return text


def _mean_ms(per_sample_s: dict[str, float] | None) -> float | None:
    return statistics.fmean(per_sample_s.values()) * 1e3 if per_sample_s else None


def markdown(doc: Document) -> str:
    return rows_markdown(doc, COLUMNS)


def csv(doc: Document) -> str:
    return rows_csv(doc, COLUMNS)


def shown_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with each figure as the console shows it (rounded, a fraction in percent), for the HTML table; a
    missing value stays None."""
    return [{c: None if v is None else shown(c, v) for c, v in row.items()} for row in rows]


def html_tables(doc: Document) -> list[str]:
    return [table_html(run_name(doc), HTML_COLUMNS, shown_rows(doc.rows))]


def plots(doc: Document, folder: Path) -> list[Path]:
    from speechperf.views import bench_plots  # matplotlib's, imported only for a page

    return bench_plots.draw(doc, folder)


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title, plots=plots)
