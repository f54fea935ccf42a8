"""How a tune document (``kind: tune``) is shown: a table per stage of every candidate screened or dropped, the
pipelines run whole, then the answer (the winner, the processes, the final compare); the Pareto plot on the page.

Each is read from the document alone: its rows (``phase`` "stage" or "end to end"), ``objective``, ``answer``,
``final_compare``, ``quality_budget`` and the config's stages, so that ``speechperf show`` prints what the run
printed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from speechperf import stats, tables
from speechperf.results import Document
from speechperf.store.html import table_html
from speechperf.views import Shown, View, rows_csv, rows_markdown

log = logging.getLogger(__name__)

#: The CSV's, the Markdown's and the HTML table's columns.
COLUMNS = (
    "phase",
    "candidate",
    "stage",
    "backend",
    "variant",
    "precision",
    "threads",
    "rung",
    "mean_ms",
    "stdev_ms",
    "samples_per_s",
    "peak_rss_mib",
    "size_mb",
    "quality",
    "parity",
    "front",
    "status",
)
STAGE = "stage"
END_TO_END = "end to end"


def title(doc: Document) -> str:
    model_type = ((doc.config or {}).get("general") or {}).get("model_type")
    return f"speechperf tune: {model_type}, objective {doc.get('objective')}"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} MiB"


def _stage_model(doc: Document, stage: str) -> Any:
    section = (doc.config or {}).get(stage) or {}
    return section.get("model") or section.get("path")


def _stage_tables(doc: Document, heading: str) -> list[str]:
    """A table per stage: its candidates screened (those with a variant), then those dropped before any run."""
    stage_rows = [r for r in doc.rows if r.get("phase") == STAGE]
    screened = {r["stage"] for r in stage_rows if "variant" in r}
    out = []
    for stage in sorted(screened, key=lambda s: int(s.removeprefix("stage"))):
        body = [
            (r.get("backend"), r.get("variant"), r.get("precision"), r.get("threads"), r.get("rung") or "-",
             stats.mean_sigma(r.get("mean_ms"), r.get("stdev_ms")), _mib(r.get("peak_rss_mib")), r.get("status"))
            if "variant" in r
            else (r.get("backend"), "*", r.get("precision"), "-", "-", "-", "-", r.get("status"))
            for r in stage_rows if r["stage"] == stage
        ]  # fmt: skip
        out.append(tables.render_table(
            f"{heading}: {stage} ({_stage_model(doc, stage)})",
            ("backend", "variant", "precision", "threads", "rung", "stage mean ± σ (ms)", "peak RSS", "status"),
            body, left=("backend", "variant", "precision", "status"),
        ))  # fmt: skip
    return out


def _pipelines_table(doc: Document, heading: str) -> list[str]:
    """The reference and every pipeline run whole."""
    everyone = [r for r in doc.rows if r.get("phase") == END_TO_END]
    if not everyone:
        return []
    body = [
        (p.get("candidate"), stats.mean_sigma(p.get("mean_ms"), p.get("stdev_ms")),
         "-" if p.get("samples_per_s") is None else f"{p['samples_per_s']:.2f}", _mib(p.get("peak_rss_mib")),
         "-" if p.get("size_mb") is None else f"{p['size_mb']:.1f}", p.get("quality") or "-",
         "yes" if p.get("front") else "", p.get("status"))
        for p in everyone
    ]  # fmt: skip
    return [tables.render_table(
        f"{heading}: end to end",
        ("pipeline", "mean ± σ (ms)", "samples/s", "peak RSS", "size MB", "quality", "front", "status"),
        body, left=("pipeline", "quality", "status"),
    )]  # fmt: skip


def console(doc: Document, how: Shown) -> str:
    """The stage tables, the pipelines, then the answer's lines; where nothing could be measured, its one line."""
    if doc.get("nothing_measured"):
        return f"{doc.get('nothing_measured')}\n"
    heading = title(doc)
    return (
        "\n".join(_stage_tables(doc, heading) + _pipelines_table(doc, heading) + list(doc.get("answer") or [])) + "\n"
    )


def _said(doc: Document) -> list[str]:
    return [*(doc.get("answer") or []), *doc.notes]


def markdown(doc: Document) -> str:
    """Every candidate and pipeline, then the answer and the notes."""
    text = rows_markdown(doc, COLUMNS)
    said = _said(doc)
    return f"{text}\n## The answer\n\n" + "".join(f"- {line}\n" for line in said) if said else text


def csv(doc: Document) -> str:
    return rows_csv(doc, COLUMNS)


def html_tables(doc: Document) -> list[str]:
    out = [table_html(title(doc), list(COLUMNS), doc.rows)]
    final = doc.get("final_compare") or {}
    if final.get("rows"):
        out.append(table_html("the final compare (interleaved runs)", ["cell", "mean_ms", "stdev_ms", "quality"],
                              final["rows"]))  # fmt: skip
    said = _said(doc)
    if said:
        out.append(table_html("the answer", ["line"], [{"line": line} for line in said]))
    return out


def budget_line(reference: dict[str, Any] | None, budget: dict[str, Any]) -> float | None:
    """The worst quality the budget allows, in the plot's unit: the reference's WER + max_wer_increase, or its
    (ASR-)BLEU - max_bleu_drop; None where the reference has no score or the budget sets no limit on it."""
    if reference is None or reference.get("value") is None:
        return None
    metric, value = reference.get("metric"), reference["value"]
    if metric == "WER" and budget.get("max_wer_increase") is not None:
        return value + budget["max_wer_increase"]
    if metric in ("BLEU", "ASR-BLEU") and budget.get("max_bleu_drop") is not None:
        return value - budget["max_bleu_drop"]
    return None


def draw(doc: Document, path: Path) -> Path | None:
    """The Pareto plot into ``path`` (``tune --plot``): with --objective server the serving front (completed
    samples/s against the latency at the peak), else the pipelines'; None when nothing was measured."""
    from speechperf.views.tune_plot import plot_front, plot_serving

    serving = doc.get("serving")
    if isinstance(serving, dict):
        points = [m for m in serving.get("measured") or () if m.get("completed_qps") and m.get("latency_ms")]
        return plot_serving(points, serving, path, title(doc)) if points else None
    whole = [r for r in doc.rows if r.get("phase") == END_TO_END]
    reference = next((r for r in whole if r.get("status") == "reference"), None)
    measured = [r for r in whole if r is not reference and r.get("mean_ms") is not None]
    if not measured:
        return None
    line = budget_line(reference, doc.get("quality_budget") or {})
    objective = doc.get("objective") or "latency"
    return plot_front(reference, measured, "latency" if objective == "server" else objective, path, title(doc), line)


def plots(doc: Document, folder: Path) -> list[Path]:
    """The --html page's Pareto plot; without matplotlib (an extra) the page goes without it rather than fail."""
    from speechperf.extras import MissingExtraError, require

    try:
        require("matplotlib", "the Pareto plot of speechperf tune")
    except MissingExtraError as exc:
        log.warning("%s", exc)
        return []
    drawn = [draw(doc, folder / "tune.png")]
    if isinstance(doc.get("serving"), dict):  # the pipelines' front too, beside the serving one
        drawn.append(
            draw(Document(doc.kind, rows=doc.rows, body={**doc.body, "serving": None}), folder / "pipelines.png")
        )
    return [d for d in drawn if d is not None]


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title, plots=plots)
