"""The ``profile`` document shown (``speechperf profile``, the step profiler's summary, docs/profiler.md): the op
table, the ops furthest below the compute roof, the step by op category, the step timing (paddle's "Perf Summary":
reader_cost, batch_cost, ips) and where the trace is, all from the document alone
(``speechperf.profiler.summary.ProfileSummary.to_document`` writes it).

The same document is the category table the profiler writes beside its trace (``*.categories.json``, read by
``speechperf profile-compare``): its rows are the categories, its ``by_category``, ``steps`` and ``step_ns`` the
table's; a file holding only those (or a version 1 one) shows its category table.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from speechperf import tables
from speechperf.results import Document
from speechperf.store.html import table_html
from speechperf.views import Shown, View, rows_csv

UNIT = "ms"
#: How many ops the console's op table lists (the CSV and the page list every one).
TOP_OPS = 25
#: How many ops the table of those furthest below the roof lists.
TOP_BELOW_ROOF = 10
#: The width the console is drawn at when stdout is no terminal: op names are long, a log file has room.
LOG_WIDTH = 140
BETWEEN = "between ops"
OP_COLUMNS = ("op", "calls", f"total {UNIT}", f"avg {UNIT}", f"max {UNIT}", f"min {UNIT}")
CSV_COLUMNS = ("op", "calls", "total_ms", "avg_ms", "max_ms", "min_ms", "flops")


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _avg_ns(op: Mapping[str, Any]) -> float:
    return op["total_ns"] / op["calls"] if op["calls"] else 0.0


def title(doc: Document) -> str:
    return f"speechperf profile ({doc.get('backend') or '?'})"


# -- the tables, as (title, caption, headers, right-aligned from, cells) -----------------------------------------


def op_table(doc: Document, limit: int | None = TOP_OPS) -> tuple[str, str, Sequence[str], list[list[str]]]:
    ops = doc.get("ops") or []
    shown = ops if limit is None else ops[:limit]
    caption = (doc.get("op_source") or "") + (
        f"; {len(ops) - len(shown)} more rows not shown" if len(shown) < len(ops) else ""
    )
    cells = [
        [o["op"], str(o["calls"]), *(_ms(v) for v in (o["total_ns"], _avg_ns(o), o["max_ns"], o["min_ns"]))]
        for o in shown
    ]
    return f"{doc['backend']} ops, sorted by {doc['sorted_key']} ({UNIT})", caption, OP_COLUMNS, cells


def below_roof_table(doc: Document) -> tuple[str, str, Sequence[str], list[list[str]]] | None:
    """The ops that lose the most time against the compute roof: their time less the time their FLOPs would take
    at the roof. None when no op has a FLOP count or no roof is known."""
    roof = doc.get("roof")
    counted = [o for o in doc.get("ops") or () if o.get("flops") and o["total_ns"]]
    if not counted or roof is None:
        return None
    peak, what = roof  # GFLOP/s = FLOPs per ns

    def lost(o: Mapping[str, Any]) -> float:
        return o["total_ns"] - o["flops"] / peak

    headers = ("op", "calls", f"total {UNIT}", "GFLOP", "GFLOP/s", "% of roof", f"lost {UNIT}")
    cells = []
    for o in sorted(counted, key=lost, reverse=True)[:TOP_BELOW_ROOF]:
        rate = o["flops"] / o["total_ns"]  # GFLOP/s
        cells.append(
            [
                o["op"],
                str(o["calls"]),
                _ms(o["total_ns"]),
                f"{o['flops'] / 1e9:.4f}",
                f"{rate:.1f}",
                f"{100 * rate / peak:.1f}",
                _ms(lost(o)),
            ]
        )
    caption = "estimate: the profiler's FLOPs per op over its host time; time lost = time - FLOPs / roof"
    return f"ops furthest below the roof ({peak:.1f} GFLOP/s, {what})", caption, headers, cells


def below_roof_line(doc: Document) -> str:
    """Why no op is listed against the roof."""
    why = (
        "no compute roof is known in this loop (speechperf profile measures one)"
        if any(o.get("flops") for o in doc.get("ops") or ())
        else f"the {doc['backend']} profiler counted no FLOPs per op"
    )
    return f"ops below the roof: {why}; the per-stage roofline is in bench and compare"


def category_rows(doc: Document) -> list[tuple[str, float, float]]:
    """(category, ms per step, share of the step), then ``between ops``: from the table's counts (exact), not its
    rounded rows."""
    counts: Mapping[str, int] = doc["by_category"]
    steps, step_ns = max(int(doc["steps"]), 1), int(doc["step_ns"])
    per, total = steps * 1e6, step_ns or 1
    between = step_ns - sum(counts.values())
    return [(c, ns / per, ns / total) for c, ns in [*counts.items(), (BETWEEN, between)]]


def category_table(doc: Document) -> tuple[str, str, Sequence[str], list[list[str]]] | None:
    if doc.get("by_category") is None:
        return None
    cells = [[c, f"{ms:.3f}", f"{share * 100:.1f}%"] for c, ms, share in category_rows(doc)]
    cells.append(["step", f"{int(doc['step_ns']) / max(int(doc['steps']), 1) / 1e6:.3f}", "100.0%"])
    title = f"{doc['backend']} step by category ({doc['steps']} steps)"
    return title, doc.get("source") or "", ("category", "ms/step", "share"), cells


def _perf_row(*cells: str) -> str:
    return "| " + " | ".join(c.center(15) for c in cells) + " |"


def timing_lines(doc: Document) -> list[str]:
    """The step time and paddle's "Perf Summary" (seconds), as paddle prints it."""
    stats = doc.get("step_time_ms")
    if "step_time_ms" not in doc.body:  # a category table alone: no timing but its own perf summary
        return []
    if not stats:
        return ["step time: no step of batch_range was timed"]
    perf, unit = doc["perf_summary"], doc["ips_unit"]
    lines = [
        f"steps timed: {doc['timing']['steps']}",
        f"step time ({UNIT}): mean {stats['mean']:.3f}, median {stats['median']:.3f}, min {stats['min']:.3f}, "
        f"max {stats['max']:.3f}",
        f"ips: {doc['ips']:.2f} {unit}",
        "Perf Summary".center(100, "="),
    ]
    if "reader_cost" in perf:
        lines.append(f"Reader Ratio: {perf['reader_cost']['avg'] / perf['batch_cost']['avg'] * 100:.3f}%")
    lines.append(f"Time Unit: s, IPS Unit: {unit}")
    lines.append(_perf_row("", "avg", "max", "min"))
    for item, figures in perf.items():
        lines.append(_perf_row(item, *(f"{figures[k]:.5f}" for k in ("avg", "max", "min"))))
    return lines


def trace_lines(doc: Document) -> list[str]:
    lines = []
    if doc.get("raw_path") is not None:
        lines.append(f"{doc['backend']} profile: {doc['raw_path']}")
    if doc.get("trace_path") is not None:
        lines.append(f"trace: {doc['trace_path']} (open it in Perfetto, https://ui.perfetto.dev, or chrome://tracing)")
    if doc.get("categories_path") is not None:
        lines.append(
            f"categories: {doc['categories_path']} (speechperf profile-compare A B puts two runs side by side)"
        )
    return lines


def _lines(doc: Document) -> list[str]:
    return [*timing_lines(doc), *trace_lines(doc), *(doc.get("summary_notes") or ())]


# -- the renderings ----------------------------------------------------------------------------------------------


def _rich_table(spec: tuple[str, str, Sequence[str], list[list[str]]], min_width: int | None = None):
    from rich.table import Table

    title, caption, headers, cells = spec
    table = Table(title=title, caption=caption, min_width=min_width)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right")
    for row in cells:
        table.add_row(*row)
    return table


def console(doc: Document, how: Shown) -> str:
    """The op table (the first 25 ops), the ops below the roof, the step by category, the timing and the trace, as
    rich draws them: at the terminal's width, or ``LOG_WIDTH`` into a pipe or a log."""
    from rich.console import Console

    buf = io.StringIO()
    out = Console(file=buf, soft_wrap=False, width=LOG_WIDTH if how.width == tables.NOT_A_TERMINAL else how.width)
    if doc.get("ops"):
        out.print(_rich_table(op_table(doc)))
        below = below_roof_table(doc)
        if below is not None:
            out.print(_rich_table(below))
        else:
            out.print(below_roof_line(doc), highlight=False, markup=False)
    categories = category_table(doc)
    if categories is not None:
        out.print(_rich_table(categories, min_width=max(len(categories[0]), 60)))
    for line in _lines(doc):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    return buf.getvalue()


def _sections(doc: Document) -> list[tuple[str, str, Sequence[str], list[list[str]]]]:
    """Every table of the document, the op table whole."""
    found = [op_table(doc, limit=None)] if doc.get("ops") else []
    found += [t for t in (below_roof_table(doc), category_table(doc)) if t is not None]
    return found


def markdown(doc: Document) -> str:
    parts = [f"# {title(doc)}\n"]
    for heading, caption, headers, cells in _sections(doc):
        parts.append(f"## {heading}\n\n" + tables.to_markdown(headers, cells) + (f"\n{caption}\n" if caption else ""))
    if doc.get("ops") and below_roof_table(doc) is None:
        parts.append(below_roof_line(doc) + "\n")
    lines = _lines(doc)
    if lines:
        parts.append("```\n" + "\n".join(lines) + "\n```\n")
    return "\n".join(p for p in parts if p)


def csv(doc: Document) -> str:
    """Every op (ms; ``flops`` where the profiler counted them); a profile without an op table (timer_only): its
    categories, as the JSON's rows."""
    if not doc.get("ops"):
        return rows_csv(doc, ("category", "ms_per_step", "share")) if doc.rows else ""
    records = (
        {
            "op": o["op"],
            "calls": o["calls"],
            "total_ms": o["total_ns"] / 1e6,
            "avg_ms": _avg_ns(o) / 1e6,
            "max_ms": o["max_ns"] / 1e6,
            "min_ms": o["min_ns"] / 1e6,
            "flops": o.get("flops"),
        }
        for o in doc["ops"]
    )
    return tables.to_csv(CSV_COLUMNS, records)


def html_tables(doc: Document) -> list[str]:
    out = []
    for heading, _caption, headers, cells in _sections(doc):
        out.append(table_html(heading, headers, [dict(zip(headers, row)) for row in cells], key=headers))
    perf = doc.get("perf_summary") or {}
    if perf:
        rows = [{"": item, **{k: f"{v[k]:.5f}" for k in ("avg", "max", "min")}} for item, v in perf.items()]
        out.append(table_html(f"Perf Summary (s; ips in {doc.get('ips_unit')})", ("", "avg", "max", "min"), rows))
    paths = (("trace", "trace_path"), ("framework profile", "raw_path"), ("categories", "categories_path"))
    files = [{"file": name, "path": doc.get(key)} for name, key in paths if doc.get(key)]
    if files:
        out.append(table_html("files", ("file", "path"), files))
    return out


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title)
