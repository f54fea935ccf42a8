"""``--html FILE``: one self-contained HTML page of a run: its tables, its plots, its environment and its raw
JSON. Self-contained means it opens with no network and no other file: the CSS is inline, each plot is a base64
``data:`` URI, there is no script, and the raw numbers are both in the page (a ``<pre>`` behind the "raw numbers"
link) and a ``data:`` download link. Written through the one atomic writer (speechperf.outputs), so a hostile
path is refused with one line before anything is measured."""

from __future__ import annotations

import base64
import html
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from speechperf.outputs import check_output_path, write_text_atomic
from speechperf.results import Document
from speechperf.results.figures import shown
from speechperf.store.record import shown_environment

_MIME = {".png": "image/png", ".svg": "image/svg+xml"}
#: The columns a table shows first (the rest of a wider table is in a details block under it): about what fits in
#: 1400 px beside the first column, which stays in view when the full table scrolls.
KEY_COLUMNS = 10
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th { background: #e8eef7; } td.text { text-align: left; }
td { background: #fff; } tr:nth-child(even) td { background: #f6f6f6; }
th:first-child, td:first-child { position: sticky; left: 0; z-index: 1; box-shadow: 1px 0 0 #bbb; }
div.wide { overflow-x: auto; max-width: 100%; }
details { margin: 0.5em 0; } summary { cursor: pointer; color: #245; }
p.command { font-family: ui-monospace, monospace; background: #f4f4f4; padding: 0.5em 1em; overflow-wrap: anywhere; }
ul.notes li { margin: 0.2em 0; } ul.warnings li { color: #8a4b00; margin: 0.2em 0; }
p.incomplete { color: #a00; font-weight: bold; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; display: block; }
pre { background: #f4f4f4; padding: 1em; overflow: auto; font-size: 0.8em; max-height: 40em; }
"""


def check_html_path(path: Path) -> Path:
    """Before anything is measured: the path as every output (a FIFO, a device, an unwritable folder: one line)."""
    return check_output_path(path, "--html")


def _table(columns: Sequence[str], records: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in records:
        cells = []
        for c in columns:
            value = r.get(c)
            kind = "" if isinstance(value, (int, float)) and not isinstance(value, bool) else ' class="text"'
            cells.append(f"<td{kind}>{html.escape(shown(c, value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    rows = "\n".join(body)
    return f'<div class="wide"><table><tr>{head}</tr>\n{rows}\n</table></div>'


def table_html(
    caption: str, columns: Sequence[str], records: Iterable[Mapping[str, Any]], key: Sequence[str] | None = None
) -> str:
    """A table of ``records`` (the same row dicts the CSV and Markdown exports write), each figure as the console
    shows it (``speechperf.results.figures.shown``: rounded, percent for a fraction); a column empty in every row
    is left out, so the page shows what was measured. ``key``: the columns shown first (default: the first
    ``KEY_COLUMNS``); a wider table is whole in a details block under them."""
    records = list(records)
    present = [c for c in columns if any(r.get(c) not in (None, "") for r in records)]
    first = [c for c in (key or present[:KEY_COLUMNS]) if c in present]
    parts = [f"<h2>{html.escape(caption)}</h2>", _table(first, records)]
    if len(first) < len(present):
        parts.append(
            f"<details><summary>every column ({len(present)})</summary>\n{_table(present, records)}\n</details>"
        )
    return "\n".join(parts)


def image_html(path: Path) -> str:
    mime = _MIME.get(path.suffix.lower(), "application/octet-stream")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.name)}" src="data:{mime};base64,{data}">'


def _environment_html(env: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr><td class="text">{html.escape(k)}</td><td class="text">{html.escape(str(v))}</td></tr>'
        for k, v in env.items()
    )
    return f"<h2>Environment</h2>\n<table>{rows}</table>"


def _items(css: str, title: str, lines: Sequence[str]) -> list[str]:
    if not lines:
        return []
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return [f"<h2>{title}</h2>", f'<ul class="{css}">{items}</ul>']


def render(
    title: str,
    tables: Sequence[str],
    images: Sequence[Path],
    environment: Mapping[str, Any],
    raw: Any,
    notes: Sequence[str] = (),
    warnings: Sequence[str] = (),
    command: Sequence[str] = (),
    complete: bool = True,
) -> str:
    """The page: the command line, whether the run finished, its notes and warnings, ``tables`` (from
    ``table_html``), the plots in ``images`` that exist, the environment, and ``raw`` (the run's JSON document)
    both in a ``<pre>`` and as a download link."""
    text = json.dumps(raw, indent=2, allow_nan=False, default=str)
    link = base64.b64encode(text.encode()).decode("ascii")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if command:
        parts.append(f'<p class="command">$ {html.escape(shlex.join(command))}</p>')
    if not complete:
        parts.append('<p class="incomplete">Incomplete: the run was interrupted; this is what it measured.</p>')
    parts += [
        '<p><a href="#raw">raw numbers</a> · '
        f'<a download="speechperf.json" href="data:application/json;base64,{link}">download the JSON</a></p>',
        *_items("warnings", "Warnings", warnings),
        *_items("notes", "Notes", notes),
        *tables,
    ]
    plots = [image_html(p) for p in images if Path(p).is_file()]
    if plots:
        parts += ["<h2>Plots</h2>", *plots]
    if environment:
        parts.append(_environment_html(environment))
    parts += ['<h2 id="raw">Raw numbers (JSON)</h2>', f"<pre>{html.escape(text)}</pre>", "</body></html>"]
    return "\n".join(parts) + "\n"


def render_document(doc: Document, tables: Sequence[str], images: Sequence[Path], title: str) -> str:
    """The page of a result document: the tables the command passes, or else its rows."""
    if not tables and doc.rows:
        columns: dict[str, None] = {}
        for row in doc.rows:
            columns.update(dict.fromkeys(row))
        tables = [table_html(title, list(columns), doc.rows)]
    return render(
        title,
        tables,
        images,
        shown_environment(doc),
        doc.to_json(),
        notes=doc.notes,
        warnings=doc.warnings,
        command=doc.command,
        complete=doc.complete,
    )


def write_html(path: Path, page: str) -> None:
    write_text_atomic(path, page, "--html")
