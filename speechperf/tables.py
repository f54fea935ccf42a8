"""The exporters of every command's result (bench, compare, optimize): CSV and Markdown, one row per record with
fixed columns, and the terminal table. Each command turns its result into rows once; these write them.

A missing value is an empty CSV field and a ``-`` in Markdown. A ``|`` inside a Markdown cell is escaped (``\\|``) so
that a value holding one (a parity note, an error reason) cannot split the row.
"""

from __future__ import annotations

import csv
import io
import math
import shutil
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


#: The width of a table not fitted to a terminal (``bench --wide``, the other commands' tables): no row wraps.
WIDE = 480
#: The width a table is fitted to when stdout is no terminal (a pipe, a log, CI).
NOT_A_TERMINAL = 100
#: The most columns the key-column tables of diff, history and loadgen take (their ``--wide`` shows every column).
FIT = 120


def terminal_width(file: IO[str]) -> int:
    """The columns a table printed to ``file`` may take: the terminal's width when ``file`` is one, else
    ``NOT_A_TERMINAL``."""
    isatty = getattr(file, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size((NOT_A_TERMINAL, 24)).columns
    return NOT_A_TERMINAL


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures in plain notation: 0.0551, 15.9, 1234 (never 0.06 or 1.23e+03)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def render_table(
    title: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    left: Collection[str] = (),
    width: int | None = None,
    wrap: Collection[str] | None = None,
) -> str:
    """The terminal table (rich) as text: the headers named in ``left`` are left-aligned (text), the others right
    (numbers); a missing value shows as ``-``; a header may take two lines (``"p90\\n(ms)"``). ``width``: no line is
    longer: the columns named in ``wrap`` (default: ``left``) wrap inside themselves to fit, the others never do;
    None: ``WIDE``, so that a pipe or a log never wraps a row."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for header in headers:
        # Fitted to a width, a wrapping column folds a word too long for it, never cuts it to an ellipsis.
        wraps = header in (left if wrap is None else wrap)
        table.add_column(header, justify="left" if header in left else "right", overflow="fold", no_wrap=not wraps)
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    buf = io.StringIO()
    Console(file=buf, soft_wrap=False, width=width or WIDE).print(table)
    return buf.getvalue()


def print_table(
    title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], file: IO[str], left: Collection[str] = ()
) -> None:
    """``render_table`` written to ``file`` (a command's stdout)."""
    file.write(render_table(title, headers, rows, left))
