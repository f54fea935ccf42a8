"""The ``diff`` document shown (``speechperf diff``, docs/compare.md "Regression gate"): per stage, cell, variant or
scenario, NEW against BASE with the test over the statistical units and the gate's verdict, then what the test was
over and the gate; all from the document's rows (``speechperf.regression.document`` writes them).

The timing kinds (bench, compare, optimize) show a row per unit: each side's mean ± σ with its count, new/base ± σ,
Welch's p, the ratios of the median, p90, peak RSS and WER, and the verdict. The serving kinds (loadgen, serving)
show a line per unit and figure (``figures`` of the row), LoadGen's single values side by side.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from speechperf import stats, tables
from speechperf.errors import shorten_path
from speechperf.results import Document
from speechperf.results.figures import shown
from speechperf.store.html import table_html
from speechperf.tables import significant
from speechperf.views import Shown, View, rows_csv

SERVING_KINDS = ("serving", "loadgen")
#: The serving figures where higher is better (``speechperf.regression.HIGHER_IS_BETTER``).
RATES = ("samples_per_s", "peak_qps", "completed_qps")
#: What the test is over, in words, by a row's ``tested_over``.
UNIT_WORDS = {
    "run": "one process run (its mean per-sample runtime)",
    "sample": "one sample (its median over the repeats), pooled over the runs: a sample-level test (--sample-level), "
    "blind to how much a figure moves from one process to the next",
}
LOADS_DIFFER = (
    "not gated (loads differ): the two sides timed under different loads (the warning above), so a time or "
    "rate that got worse may be the machine's, not the code's; re-run both sides on a quiet machine, or pass "
    "--gate-under-load to gate it anyway"
)
WAITED = (
    "not gated (waited for a CPU): NEW's runs waited for a CPU (the warning above: other processes took their "
    "core), so a time or rate that got worse may be the machine's, not the code's; re-run it on a quiet machine, or "
    "pass --gate-under-load to gate it anyway"
)
#: The row's columns in the CSV: the gated figure on each side (in ``figure_unit``: times in ms), the test, the verdict,
#: then what the console shows beside them. A serving row's ``figures`` (a list) is in the JSON only.
CSV_COLUMNS = (
    "unit",
    "metric",
    "figure",
    "figure_unit",
    "base",
    "new",
    "new_over_base",
    "p_value",
    "tested_over",
    "base_units",
    "new_units",
    "untested",
    "verdict",
    "worse_low",
    "base_runs",
    "new_runs",
    "base_mean_ms",
    "base_stdev_ms",
    "new_mean_ms",
    "new_stdev_ms",
    "mean_ratio",
    "mean_ratio_sigma",
    "median_ratio",
    "p90_ratio",
    "peak_rss_ratio",
    "wer_ratio",
    "base_result",
    "new_result",
)


def title(doc: Document) -> str:
    return (
        f"speechperf diff: {shorten_path(doc['new'])} against {shorten_path(doc['base'])} "
        f"({doc['compared_kind']} documents)"
    )


def _serving(doc: Document) -> bool:
    return doc["compared_kind"] in SERVING_KINDS


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _gate_line(doc: Document, test: bool) -> str:
    fail_above, metric = doc["fail_above"], doc["fail_metric"]
    if fail_above is None:
        return "no gate (--fail-above not given)"
    if metric == "headline":  # name what it stands for here
        metric += f" ({', '.join(dict.fromkeys(r['metric'] for r in doc.rows))})"
    line = f"gate: {metric} worse by more than {fail_above:.1%} (new/base above {1 + fail_above:.3f}; for a rate, "
    line += f"base/new above {1 + fail_above:.3f})"
    if test and doc.get("drift") is not None:  # a diff written before the drift was allowed for: Welch's p
        return line + (
            f" at the lower {doc.get('confidence', stats.GATE_CONFIDENCE):.0%} confidence bound of the ratio (the "
            f"units' spread and a drift of {doc['drift']:.1%} per side between sessions, --drift) is a regression; "
            "above the threshold but not at its bound: not significant"
        )
    return line + (f" with Welch's p < {stats.SIGNIFICANCE}" if test else ", the ratio alone") + " is a regression"


def _gated(row: dict[str, Any], key: str) -> Any:
    """A diff written before the rows held the console's figures: its gated figure, where that is the mean."""
    return row.get(key) if row.get("metric") == "mean" else None


#: The timing table's ratio columns beside the mean's, shown with --wide (and in the Markdown and the page).
RATIO_COLUMNS = ("median", "p90", "peak RSS", "WER")


def _timing_table(doc: Document) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    unit = doc.rows[0]["tested_over"] if doc.rows else "run"
    first = {"bench": "stage", "optimize": "variant"}.get(doc["compared_kind"], "cell")
    headers = (
        first,
        f"base mean ± σ\n(ms, n {unit}s)",
        f"new mean ± σ\n(ms, n {unit}s)",
        "new/base",
        "Welch's p",
        *RATIO_COLUMNS,
        f"gate\n({doc['fail_metric']})",
    )

    def ms(row: dict[str, Any], side: str) -> str:
        mean, sigma = row.get(f"{side}_mean_ms", _gated(row, side)), row.get(f"{side}_stdev_ms")
        if mean is None:
            return "-"
        return f"{stats.mean_sigma(mean, sigma)} (n={row[f'{side}_units']})"

    def mean_ratio(row: dict[str, Any]) -> str:
        ratio = row.get("mean_ratio", _gated(row, "new_over_base"))
        return "-" if ratio is None else stats.mean_sigma(ratio, row.get("mean_ratio_sigma"))

    cells = [
        (
            r["unit"],
            ms(r, "base"),
            ms(r, "new"),
            mean_ratio(r),
            "-" if r["p_value"] is None else f"{r['p_value']:.2g}",
            *(_ratio_cell(r.get(f"{m}_ratio")) for m in ("median", "p90", "peak_rss", "wer")),
            r["verdict"],
        )
        for r in doc.rows
    ]
    return headers, cells


def _timing_lines(doc: Document) -> list[str]:
    unit = doc.rows[0]["tested_over"] if doc.rows else "run"
    lines = [f"statistical unit: {UNIT_WORDS[unit]}; {_gate_line(doc, True)}"]
    untested = dict.fromkeys(
        r["untested"] for r in doc.rows if r["untested"] and (r.get("base_runs", 1) or r.get("new_runs", 1))
    )
    lines += [
        f"{reason}: the ratio is shown and gates nothing; run each side in several processes (bench --runs 3, "
        "compare --runs 3), or pass --sample-level to test the samples of one process"
        for reason in untested
    ]
    return lines


def _serving_table(doc: Document) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    first = "scenario" if doc["compared_kind"] == "loadgen" else "cell"
    headers: tuple[str, ...] = (
        first,
        "result\n(base / new)",
        "figure",
        "base",
        "new",
        "new/base",
        "better",
        f"gate ({doc['fail_metric']})",
    )
    cells: list[tuple[str, ...]] = []
    for r in doc.rows:
        for i, line in enumerate(r.get("figures") or [_gated_line(r)]):
            figure = line["figure"]
            cells.append(
                (
                    r["unit"] if i == 0 else "",
                    f"{r.get('base_result') or '-'} / {r.get('new_result') or '-'}" if i == 0 else "",
                    figure,
                    shown(figure, line["base"]),
                    shown(figure, line["new"]),
                    _ratio_cell(line["new_over_base"]),
                    "higher" if line["higher_is_better"] else "lower",
                    r["verdict"] if line["metric"] == r["metric"] else "",
                )
            )
    return headers, cells


def _gated_line(row: dict[str, Any]) -> dict[str, Any]:
    """A serving diff written before the rows held each figure's line: the gated figure's line alone."""
    metric = row["metric"]
    rate = metric in RATES
    return {
        "metric": metric,
        "figure": metric if rate else f"{metric}_ms",
        "base": row["base"],
        "new": row["new"],
        "new_over_base": row["new_over_base"],
        "higher_is_better": rate,
    }


def _serving_lines(doc: Document) -> list[str]:
    unit = (
        "statistical unit: one LoadGen run (one process) on each side: its figures are single values, so no test is "
        "made and the ratio alone decides"
    )
    lines = [f"{unit}; {_gate_line(doc, False)}"]
    for r in doc.rows:
        if r.get("base_bracket") and r.get("new_bracket") and r.get("metric") == "peak_qps":
            lines.append(
                f"{r['unit']}: the two searches' brackets decide, not the ratio alone: BASE's peak is "
                f"{_where(*r['base_bracket'])}, NEW's {_where(*r['new_bracket'])}; a regression only when BASE's "
                "low end is above NEW's high end by more than the threshold"
            )
    return lines


def _where(low: float | None, high: float | None) -> str:
    """Where a peak search's bracket puts its peak, in target rates."""
    if high is None:
        return "at least " + ("0" if low is None else significant(low)) + " QPS (no trial missed the bound)"
    if low is None:
        return f"below {significant(high)} QPS"
    return f"between {significant(low)} and {significant(high)} QPS"


def _one_line(headers: Sequence[str]) -> tuple[str, ...]:
    """The headers of the Markdown and the page: a two-line console header on one line."""
    return tuple(h.replace("\n", " ") for h in headers)


def _table(doc: Document) -> tuple[tuple[str, ...], list[tuple[str, ...]], list[str]]:
    """The headers, the cells and the lines under the table: the console's, the Markdown's and the page's."""
    if _serving(doc):
        headers, cells = _serving_table(doc)
        lines = _serving_lines(doc)
    else:
        headers, cells = _timing_table(doc)
        lines = _timing_lines(doc)
    if any(r["verdict"] == "not gated (loads differ)" for r in doc.rows):
        lines.append(LOADS_DIFFER)
    if any(r["verdict"] == "not gated (waited for a CPU)" for r in doc.rows):
        lines.append(WAITED)
    return headers, cells, lines


def _left(doc: Document, headers: Sequence[str]) -> tuple[str, ...]:
    if _serving(doc):
        return (headers[0], headers[1], "figure", "better", headers[-1])
    return (headers[0], headers[-1])


def console(doc: Document, how: Shown) -> str:
    """The table and, under it, the unit and the gate. Within ``tables.FIT`` columns: the timing kinds' ratio
    columns only with ``how.wide``, and the name and verdict columns wrap inside themselves; ``how.wide``: every
    column, never wrapped."""
    headers, cells, lines = _table(doc)
    width: int | None = None
    wrap: tuple[str, ...] = ()
    if not how.wide:
        if not _serving(doc):
            keep = [i for i, h in enumerate(headers) if h not in RATIO_COLUMNS]
            headers, cells = tuple(headers[i] for i in keep), [tuple(row[i] for i in keep) for row in cells]
        width, wrap = tables.FIT, (headers[0], headers[-1])
    # the title on a line of its own: two paths are often wider than the table, which would fold them
    text = tables.render_table("", headers, cells, left=_left(doc, headers), width=width, wrap=wrap)
    return f"{title(doc)}\n{text}" + "".join(f"{line}\n" for line in lines)


def markdown(doc: Document) -> str:
    headers, cells, lines = _table(doc)
    text = f"# {title(doc)}\n\n" + tables.to_markdown(_one_line(headers), cells)
    return text + "".join(f"\n{line}\n" for line in lines)


def csv(doc: Document) -> str:
    return rows_csv(doc, CSV_COLUMNS)


def html_tables(doc: Document) -> list[str]:
    headers, cells, lines = _table(doc)
    headers = _one_line(headers)
    records = [dict(zip(headers, row)) for row in cells]
    notes = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return [table_html(title(doc), headers, records, key=headers) + notes]


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title)
