"""The exporters of every command's result (bench, compare, optimize): CSV and Markdown, one row per record with
fixed columns, and the terminal table. Each command turns its result into rows once; these write them.

A missing value is an empty CSV field and a ``-`` in Markdown. A ``|`` inside a Markdown cell is escaped (``\\|``) so
that a value holding one (a parity note, an error reason) cannot split the row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import IO, Any


def to_csv(columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: "" if v is None else v for k, v in record.items()})
    return buf.getvalue()


def markdown_cell(value: Any) -> str:
    return "-" if value is None else str(value).replace("|", "\\|")


def to_markdown(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; each row holds one value per header, in the headers' order."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(markdown_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], left: Collection[str] = ()) -> str:
    """The terminal table (rich) as text: the headers named in ``left`` are left-aligned (text), the others right
    (numbers); a missing value shows as ``-``. Wide enough (480 columns) that a pipe or a log never wraps a row."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for header in headers:
        table.add_column(header, justify="left" if header in left else "right")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    buf = io.StringIO()
    Console(file=buf, soft_wrap=False, width=480).print(table)
    return buf.getvalue()


def print_table(
    title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], file: IO[str], left: Collection[str] = ()
) -> None:
    """``render_table`` written to ``file`` (a command's stdout)."""
    file.write(render_table(title, headers, rows, left))
