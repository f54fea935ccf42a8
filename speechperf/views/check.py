"""The ``check`` document shown (``speechperf check``): a row per check (meter, check, measured, target, result),
the notes of the checks that have one, and the verdict per meter asked for, from the document alone
(``speechperf.meters.check.to_document`` writes it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from speechperf import tables
from speechperf.results import Document
from speechperf.store.html import table_html
from speechperf.views import Shown, View, rows_csv

HEADERS = ("meter", "check", "measured", "target", "result")
#: The row's keys under the headers above (``result`` is the row's ``status``).
KEYS = ("meter", "check", "measured", "target", "status")
CSV_COLUMNS = (*KEYS, "decides", "note")


def report_text(rows: Sequence[Mapping[str, Any]], meters: Sequence[str], verdicts: Mapping[str, str]) -> str:
    """The plain table (no box: it reads the same in a log), the notes, then ``verdict: meter: ...; ...``."""
    table = [HEADERS] + [tuple(str(r[k]) for k in KEYS) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {r['meter']}/{r['check']}: {r['note']}" for r in rows if r.get("note")]
    if notes:
        lines += ["", "notes:"] + notes
    lines += ["", "verdict: " + "; ".join(f"{m}: {verdicts[m]}" for m in meters)]
    return "\n".join(lines)


def console(doc: Document, how: Shown) -> str:
    return report_text(doc.rows, doc["meters"], doc["verdicts"]) + "\n"


def _verdict_rows(doc: Document) -> list[dict[str, str]]:
    return [{"meter": m, "verdict": doc["verdicts"][m]} for m in doc["meters"]]


def markdown(doc: Document) -> str:
    text = "# speechperf check\n\n" + tables.to_markdown(HEADERS, ([r[k] for k in KEYS] for r in doc.rows))
    notes = [f"- {r['meter']}/{r['check']}: {r['note']}" for r in doc.rows if r.get("note")]
    if notes:
        text += "\nNotes:\n\n" + "\n".join(notes) + "\n"
    verdicts = _verdict_rows(doc)
    return text + "\n" + tables.to_markdown(("meter", "verdict"), ([v["meter"], v["verdict"]] for v in verdicts))


def csv(doc: Document) -> str:
    return rows_csv(doc, CSV_COLUMNS)


def html_tables(doc: Document) -> list[str]:
    records = [{h: r[k] for h, k in zip(HEADERS, KEYS)} | {"note": r.get("note") or ""} for r in doc.rows]
    return [
        table_html("checks", [*HEADERS, "note"], records, key=[*HEADERS, "note"]),
        table_html("verdict per meter", ("meter", "verdict"), _verdict_rows(doc)),
    ]


def title(doc: Document) -> str:
    return "speechperf check"


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title)
