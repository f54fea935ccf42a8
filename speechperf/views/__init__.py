"""How each kind of result document is shown, from the document alone (docs/results.md, "Views").

A command renders its console table, its Markdown and CSV exports and its HTML tables through the view of its
document's ``kind``, never from its in-memory types, so that ``speechperf show RESULT.json`` (or a stored run's id)
prints and writes exactly what the run itself did, from a file written by this version or an upgraded older one.

One module of this package per kind (``MODULES``), each defining ``VIEW``; a kind without one gets ``GENERIC``:
its rows as they are. A view reads only the document (and the leaves below it): what it shows must be in the file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf import tables
from speechperf.results import Document
from speechperf.results.figures import shown
from speechperf.store import html


@attrs.frozen
class Shown:
    """How the console view is laid out: ``width`` the columns it may take (``tables.terminal_width``), ``wide``
    every column (bench's ``--wide``)."""

    width: int = tables.NOT_A_TERMINAL
    wide: bool = False


def row_columns(rows: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """Every key of ``rows``, in the order first seen: the columns of a kind that declares none."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return tuple(seen)


def rows_csv(doc: Document, columns: Sequence[str] = ()) -> str:
    """The rows as they are in the JSON (fractions stay fractions): for a spreadsheet or a script."""
    columns = tuple(columns) or row_columns(doc.rows)
    return tables.to_csv(columns, ({c: row.get(c) for c in columns} for row in doc.rows))


def rows_markdown(doc: Document, columns: Sequence[str] = ()) -> str:
    """The rows for a reader: each figure as the console shows it (percent for a fraction, rounded)."""
    columns = tuple(columns) or row_columns(doc.rows)
    return tables.to_markdown(columns, ([shown(c, row.get(c)) for c in columns] for row in doc.rows))


def rows_console(doc: Document, how: Shown) -> str:
    columns = row_columns(doc.rows)
    cells = ([shown(c, row.get(c)) for c in columns] for row in doc.rows)
    return tables.render_table(title(doc), columns, cells, width=how.width)


def rows_html(doc: Document) -> list[str]:
    return [html.table_html(title(doc), list(row_columns(doc.rows)), doc.rows)] if doc.rows else []


def title(doc: Document) -> str:
    return f"speechperf {doc.kind}"


@attrs.frozen
class View:
    """One kind's renderings, each a function of the document alone.

    - ``console``: the text the command prints on stdout (its table or tables, with their titles);
    - ``markdown`` / ``csv``: the ``--markdown`` / ``--csv`` files;
    - ``html_tables``: the tables of the ``--html`` page (its notes, environment and raw JSON are the page's own);
    - ``title``: the page's title;
    - ``plots``: the page's images, drawn into a folder (None: none), from the document too.
    """

    console: Callable[[Document, Shown], str] = rows_console
    markdown: Callable[[Document], str] = rows_markdown
    csv: Callable[[Document], str] = rows_csv
    html_tables: Callable[[Document], list[str]] = rows_html
    title: Callable[[Document], str] = title
    plots: Callable[[Document, Path], list[Path]] | None = None


GENERIC = View()

#: kind -> the module of this package that defines its ``VIEW``; a kind not listed is shown by ``GENERIC``.
MODULES: dict[str, str] = {
    "bench": "bench",
    "check": "check",
    "compare": "compare",
    "compare-best": "compare",
    "diff": "diff",
    "history": "history",
    "loadgen": "loadgen",
    "optimize": "optimize",
    "profile": "profile",
    "serving": "serving",
    "tune": "tune",
}


def view_of(kind: str) -> View:
    module = MODULES.get(kind)
    if module is None:
        return GENERIC
    return importlib.import_module(f"{__name__}.{module}").VIEW
