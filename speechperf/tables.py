"""The CSV and Markdown exports of every command (bench, compare, optimize): one row per record, fixed columns.

A missing value is an empty CSV field and a ``-`` in Markdown. A ``|`` inside a Markdown cell is escaped (``\\|``) so
that a value holding one (a parity note, an error reason) cannot split the row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


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
