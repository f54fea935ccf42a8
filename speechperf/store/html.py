"""``--html FILE``: one self-contained HTML page of a run: its tables, its plots, its environment and its raw
JSON. Self-contained means it opens with no network and no other file: the CSS is inline, each plot is a base64
``data:`` URI, there is no script, and the raw numbers are both in the page (a ``<pre>`` behind the "raw numbers"
link) and a ``data:`` download link. Written through the one atomic writer (speechperf.outputs), so a hostile
path is refused with one line before anything is measured."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from speechperf.outputs import check_output_path, write_text_atomic

_MIME = {".png": "image/png", ".svg": "image/svg+xml"}
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th { background: #e8eef7; } td.text { text-align: left; }
tr:nth-child(even) td { background: #f6f6f6; }
div.wide { overflow-x: auto; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; display: block; }
pre { background: #f4f4f4; padding: 1em; overflow: auto; font-size: 0.8em; max-height: 40em; }
"""


def check_html_path(path: Path) -> Path:
    """Before anything is measured: the path as every output (a FIFO, a device, an unwritable folder: one line)."""
    return check_output_path(path, "--html")


def table_html(caption: str, columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> str:
    """A table of ``records`` (the same row dicts the CSV and Markdown exports write); a column empty in every
    row is left out, so the page shows what was measured."""
    records = list(records)
    shown = [c for c in columns if any(r.get(c) not in (None, "") for r in records)]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shown)
    body = []
    for r in records:
        cells = []
        for c in shown:
            value = r.get(c)
            kind = "" if isinstance(value, (int, float)) and not isinstance(value, bool) else ' class="text"'
            cells.append(f"<td{kind}>{'-' if value is None else html.escape(str(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    rows = "\n".join(body)
    return f'<h2>{html.escape(caption)}</h2>\n<div class="wide"><table><tr>{head}</tr>\n{rows}\n</table></div>'


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


def render(
    title: str,
    tables: Sequence[str],
    images: Sequence[Path],
    environment: Mapping[str, Any],
    raw: Any,
    notes: Sequence[str] = (),
) -> str:
    """The page: ``tables`` (from ``table_html``), the plots in ``images`` that exist, the environment, and
    ``raw`` (the run's JSON document) both in a ``<pre>`` and as a download link."""
    text = json.dumps(raw, indent=2, allow_nan=False, default=str)
    link = base64.b64encode(text.encode()).decode("ascii")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        '<p><a href="#raw">raw numbers</a> · '
        f'<a download="speechperf.json" href="data:application/json;base64,{link}">download the JSON</a></p>',
        *(f"<p>{html.escape(n)}</p>" for n in notes),
        *tables,
    ]
    plots = [image_html(p) for p in images if Path(p).is_file()]
    if plots:
        parts += ["<h2>Plots</h2>", *plots]
    if environment:
        parts.append(_environment_html(environment))
    parts += ['<h2 id="raw">Raw numbers (JSON)</h2>', f"<pre>{html.escape(text)}</pre>", "</body></html>"]
    return "\n".join(parts) + "\n"


def write_html(path: Path, page: str) -> None:
    write_text_atomic(path, page, "--html")
