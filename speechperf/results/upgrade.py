"""Older result documents read as the current schema: a version map, one step per version (as pyperf keeps one).

Schema version 1 had no envelope: each command wrote its own keys (bench ``summary``, optimize ``table``, ...),
figures had a name per command (``runtime_mean_ms``, ``mean_ms``, ``latency_ms``) and ``loadgen`` wrote no version at
all. ``_from_v1`` tells the kind from the keys, once, here; nothing else guesses a document's kind.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from speechperf.results import figures, loadgen_table
from speechperf.results.version import SCHEMA_VERSION, DocumentError

#: The version each step reads -> the step that turns it into the next version's form.
UPGRADES: dict[int, Callable[[dict[str, Any], str], dict[str, Any]]] = {}


def to_current(data: dict[str, Any], what: str) -> dict[str, Any]:
    version = data.get("schema_version")
    if version is None and "kind" not in data and _v1_kind(data) in ("loadgen", "profile"):
        version = 1  # loadgen's JSON and the profiler's category table had no version before the envelope
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise DocumentError(
            f"{what}: not a speechperf result document (schema_version {version!r}; "
            f"this speechperf reads 1 to {SCHEMA_VERSION})"
        )
    if version > SCHEMA_VERSION:
        raise DocumentError(
            f"{what}: schema_version {version} was written by a newer speechperf; this one reads 1 to "
            f"{SCHEMA_VERSION} (upgrade speechperf to read it)"
        )
    data = copy.deepcopy(data)
    while version < SCHEMA_VERSION:
        data = UPGRADES[version](data, what)
        version += 1
        data["schema_version"] = version
    return data


def _v1_kind(data: dict[str, Any]) -> str | None:
    if "result" in data and "summary" in data:
        return "bench"
    if "cells" in data and "runs" in data:
        return "compare-best" if data.get("best") else "compare"
    if "scenario" in data and "ranked_by" in data:
        return "serving"
    if "table" in data and "methods" in data:
        return "optimize"
    if "by_category" in data and "steps" in data:
        return "profile"
    runs = data.get("runs")
    if isinstance(runs, list) and runs and all(isinstance(r, dict) and "scenario" in r for r in runs):
        return "loadgen"
    return None


def _from_v1(data: dict[str, Any], what: str) -> dict[str, Any]:
    kind = _v1_kind(data)
    if kind is None:
        raise DocumentError(
            f"{what}: not a speechperf result document of schema_version 1 (no bench 'result', compare 'cells', "
            "serving 'scenario', optimize 'table', loadgen 'runs' or profile 'by_category')"
        )
    out: dict[str, Any] = {"kind": kind, "schema_version": 1, "complete": bool(data.get("complete"))}
    out["command"] = []
    out["config"] = data.get("config")
    out["environment"] = data.get("environment") or {}
    out["notes"] = []
    out["warnings"] = [str(w) for w in data.get("warnings") or ()] if isinstance(data.get("warnings"), list) else []
    rest = {k: v for k, v in data.items() if k not in out and k != "warnings"}
    if kind == "optimize" and "notes" in data:  # not the envelope's notes: each variant's (``_optimize_rows``)
        rest["notes"] = data["notes"]
    rows, rest = V1_ROWS[kind](rest)
    out["rows"] = [figures.upgrade_row(kind, row) for row in rows]
    return {**out, **rest}


def _rows_from(key: str) -> Callable[[dict[str, Any]], tuple[list[dict[str, Any]], dict[str, Any]]]:
    def take(rest: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        rows = rest.pop(key, None) or []
        return list(rows), rest

    return take


def _optimize_rows(rest: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = rest.pop("table", None) or []
    notes = rest.pop("notes", None)
    if notes:  # version 1 kept each variant's notes in a dict beside the table
        rest["variant_notes"] = notes
    if isinstance(rest.get("runs"), list):  # each run's latency_ms is mean_ms, as in the rows
        rest["runs"] = [figures.upgrade_row("optimize", r) if isinstance(r, dict) else r for r in rest["runs"]]
    return list(rows), rest


def _compare_rows(rest: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Version 1's ``quality_points`` (a WER or an agreement in percent, a BLEU in points, as ``quality_metric``
    says) under its figure's name: ``wer`` / ``agreement`` as fractions, ``bleu`` in points."""
    rows = []
    for row in rest.pop("summary", None) or []:
        row = dict(row)
        points = row.pop("quality_points", None)
        names = {"WER": "wer", "BLEU": "bleu", "ASR-BLEU": "bleu", "agreement": "agreement"}
        for name in dict.fromkeys(names.values()):
            row.setdefault(name, None)
        figure = names.get(row.get("quality_metric") or "")
        if figure is not None and isinstance(points, (int, float)):
            row[figure] = points if figure == "bleu" else points / 100
        rows.append(row)
    return rows, rest


def _serving_rows(rest: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Version 1's ``value`` under the figure it is (``peak_qps``, ``samples_per_s``), its ``latency_ms`` under its
    percentile's name (``p90_ms``) and ``rtfx`` as ``audio_s_per_s``."""
    rows = []
    for row in rest.pop("summary", None) or []:
        row = dict(row)
        latency = f"p{row.get('percentile'):g}_ms" if isinstance(row.get("percentile"), (int, float)) else None
        value = row.pop("value", None)
        if latency is not None and "latency_ms" in row:
            row[latency] = row.pop("latency_ms")
        if row.get("metric") == "latency_ms" and latency is not None:
            row["metric"] = latency
        elif row.get("metric"):
            row[row["metric"]] = value
        if "rtfx" in row:
            row["audio_s_per_s"] = row.pop("rtfx")
        rows.append(row)
    ranked = rest.get("ranked_by")
    if rows and isinstance(ranked, dict) and ranked.get("metric") == "latency_ms":
        rest["ranked_by"] = {**ranked, "metric": rows[0]["metric"]}
    if "rows" in rest:  # version 1's raw rows (every field of each cell's result)
        rest["results"] = rest.pop("rows")
    return rows, rest


def _profile_rows(rest: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return [], rest  # the category table's rows are computed from ``by_category`` (speechperf.profiler.categories)


def _loadgen_rows(rest: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Version 1 of loadgen kept no table: its rows are made from its runs, as the command makes them now."""
    peak = rest.get("peak") if isinstance(rest.get("peak"), dict) else None
    return loadgen_table.rows(list(rest.get("runs") or ()), peak), rest


#: Where each kind of version 1 kept its table rows.
V1_ROWS: dict[str, Callable[[dict[str, Any]], tuple[list[dict[str, Any]], dict[str, Any]]]] = {
    "bench": _rows_from("summary"),
    "compare": _compare_rows,
    "compare-best": _compare_rows,
    "serving": _serving_rows,
    "optimize": _optimize_rows,
    "loadgen": _loadgen_rows,
    "profile": _profile_rows,
}
UPGRADES[1] = _from_v1


def _from_v2(data: Any, what: str) -> Any:
    """Version 2's percents (``figures.V2_PERCENT``) as version 3's fractions, wherever they sit."""
    if isinstance(data, list):
        return [_from_v2(item, what) for item in data]
    if not isinstance(data, dict):
        return data
    out = {}
    for key, value in data.items():
        if key in figures.V2_PERCENT:
            key = figures.V2_PERCENT[key]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = round(value / 100, 6)
        out[key] = _from_v2(value, what)
    return out


UPGRADES[2] = _from_v2


#: Version 3's diff rows: the timing kinds' gated times in seconds (``base``, ``new``) and the means beside them.
V3_TIMING_KINDS = ("bench", "compare", "compare-best", "optimize")
V3_SECONDS = ("mean", "median", "p90", "p99")
V3_MEANS = ("base_mean_s", "base_stdev_s", "new_mean_s", "new_stdev_s")
#: The figure each gated metric is (``speechperf.regression.FIGURE``, kept here: results sits below regression).
V3_FIGURE = {"peak_rss": "peak_rss_mib", "wer": "wer", "samples_per_s": "samples_per_s", "peak_qps": "peak_qps"}


def _from_v3(data: dict[str, Any], what: str) -> dict[str, Any]:
    """A version 3 ``diff`` document in version 4's one unit: a timing kind's ``base`` / ``new`` times and the means
    beside them from seconds to milliseconds (``*_mean_s`` -> ``*_mean_ms``), every row's figure named
    (``figure``, ``figure_unit``), and a serving row's units (one LoadGen run a side) 1, not 0. Other kinds are
    unchanged."""
    if data.get("kind") != "diff":
        return data
    timing = data.get("compared_kind") in V3_TIMING_KINDS
    rows = []
    for row in data.get("rows") or ():
        row = dict(row)
        metric = str(row.get("metric"))
        if timing and metric in V3_SECONDS:
            for key in ("base", "new"):
                row[key] = _times_1000(row.get(key))
        for key in V3_MEANS:
            if key in row:
                row[key[:-2] + "_ms"] = _times_1000(row.pop(key))
        if not timing:
            row.update({k: 1 for k in ("base_units", "new_units") if row.get(k) == 0})
        figure = V3_FIGURE.get(metric, f"{metric}_ms")
        row.setdefault("figure", figure)
        row.setdefault("figure_unit", figures.unit_of(figure))
        rows.append(row)
    return {**data, "rows": rows}


def _times_1000(value: Any) -> Any:
    return value * 1e3 if isinstance(value, (int, float)) and not isinstance(value, bool) else value


UPGRADES[3] = _from_v3
