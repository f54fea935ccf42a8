"""The ``history`` document shown (``speechperf history``): the stored runs it listed, newest first, and, where a
metric was plotted, the plot of its series (over time or commits, a line per config and backend), drawn again from
the points the document keeps."""

from __future__ import annotations

from pathlib import Path

from speechperf import tables
from speechperf.results import Document
from speechperf.store.history import COLUMNS, Point
from speechperf.store.html import table_html
from speechperf.views import Shown, View, rows_csv

#: The listing's text columns (left-aligned); the id is a number.
LEFT = ("time", "kind", "model", "config", "backends", "commit", "headline")


def title(doc: Document) -> str:
    return f"speechperf history: {len(doc.rows)} run(s) in {doc['store']}"


def _cells(doc: Document) -> list[list[object]]:
    return [[row.get(c) for c in COLUMNS] for row in doc.rows]


#: The listing's columns that wrap inside themselves to keep it within ``tables.FIT`` columns.
WRAP = ("model", "config", "backends", "headline")


def _minute(value: object) -> object:
    """An ISO time to the minute, its zone dropped (``2026-12-04 18:06``): the document keeps it whole."""
    return value[:16].replace("T", " ") if isinstance(value, str) and len(value) >= 16 else value


def console(doc: Document, how: Shown) -> str:
    """The listing within ``tables.FIT`` columns (the time to the minute, the text columns wrapping), or with
    ``how.wide`` every value whole, on one line."""
    if how.wide:
        return tables.render_table(title(doc), COLUMNS, _cells(doc), left=LEFT)
    at = COLUMNS.index("time")
    cells = [[_minute(v) if i == at else v for i, v in enumerate(row)] for row in _cells(doc)]
    return tables.render_table(title(doc), COLUMNS, cells, left=LEFT, width=tables.FIT, wrap=WRAP)


def markdown(doc: Document) -> str:
    return f"# {title(doc)}\n\n" + tables.to_markdown(COLUMNS, _cells(doc))


def csv(doc: Document) -> str:
    return rows_csv(doc, COLUMNS)


def html_tables(doc: Document) -> list[str]:
    return [table_html("stored runs", COLUMNS, doc.rows)]


def series(doc: Document) -> dict[str, list[Point]] | None:
    """The plotted lines as the store gave them; None when no metric was plotted."""
    kept = doc.get("series")
    if kept is None:
        return None
    return {name: [Point(*point) for point in points] for name, points in kept.items()}


def plots(doc: Document, folder: Path) -> list[Path]:
    """The history plot of the page, from the document's series (none when no metric was plotted)."""
    from speechperf.store.plot import plot_history

    lines = series(doc)
    if lines is None:
        return []
    return [plot_history(lines, doc["metric"], doc["x_axis"], folder / "history.png", doc["stage"])]


VIEW = View(
    console=console,
    markdown=markdown,
    csv=csv,
    html_tables=html_tables,
    title=lambda doc: "speechperf history",
    plots=plots,
)
