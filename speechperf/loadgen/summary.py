"""LoadGen's ``mlperf_log_summary.txt`` read into figures: validity with each unmet condition, percentiles, rates.

Each scenario's figure is MLPerf's as the current submission checker reads it (``RESULT_FIELD_NEW``, v4.1 to v6.0,
keys of LoadGen's detail log): Server ``result_completed_samples_per_sec``, SingleStream
``early_stopping_latency_ss`` and MultiStream ``early_stopping_latency_ms`` (early stopping's estimate of the
latency percentile, ns), Offline ``result_samples_per_second``. They are taken at full precision from the detail
log of the same test (the summary rounds rates to 2 decimals); the scheduled rate and the plain percentiles are
kept beside them. An early-stopping estimate of 0 (too few queries to make one) is None.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs

_LINE = re.compile(r"^\s*([^:*]+?)\s*:\s*(.+?)\s*$")
_PERCENTILE = re.compile(r"^(\d+(?:\.\d+)?) percentile latency \(ns\)$")
_NEED = re.compile(r"Processed (\d+) queries.*?at least (\d+) more queries", re.S)
_DETAIL = ":::MLLOG "
_ESTIMATE = re.compile(r"Early stopping (\d+(?:\.\d+)?)th percentile estimate: (\d+)")
#: the detail log's key of each stream scenario's early-stopping latency (MLPerf's RESULT_FIELD_NEW)
EARLY_STOPPING_KEY = {"SingleStream": "early_stopping_latency_ss", "MultiStream": "early_stopping_latency_ms"}


@attrs.frozen
class Summary:
    valid: bool | None  # None: not judged by LoadGen (AccuracyOnly)
    result: str  # "VALID" / "INVALID" as LoadGen writes it
    unmet: tuple[str, ...]  # each condition LoadGen reports as not satisfied, with the figure that failed it
    percentiles_ms: dict[str, float]  # "p50" ... "p99.9"
    mean_ms: float | None
    headline: str  # what the scenario reports: "p90 latency 12.3 ms", "samples/s 45.6"
    scheduled_qps: float | None
    completed_qps: float | None
    samples_per_s: float | None
    fields: dict[str, str]  # every "key : value" line, as written
    min_latency_ms: float | None = None  # the fastest query: at least its own service time
    latency_missed: bool = False  # "Performance constraints satisfied: NO": the latency bound was missed
    #: early stopping's count: the queries the test processed and how many more it would need (too few queries)
    queries_needed: tuple[int, int] | None = None
    #: SingleStream / MultiStream: early stopping's estimate of the latency percentile (MLPerf's figure), ms
    early_stopping_ms: float | None = None

    @property
    def too_few_queries(self) -> bool:
        """INVALID only for want of queries or time (early stopping, min queries, min duration), not latency."""
        return not self.valid and not self.latency_missed and self.result == "INVALID"


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def read_summary(path: Path, scenario: str, target_latency_ms: float, percentile: float) -> Summary:
    fields: dict[str, str] = {}
    early: list[str] = []
    in_early = False
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("Early Stopping Result"):
            in_early = True
            continue
        if in_early:
            if line.startswith(" * ") or line.startswith(" "):
                if line.startswith(" * "):
                    early.append(line[3:].strip())
                elif early:
                    early[-1] += " " + line.strip()
                continue
            in_early = False
        match = _LINE.match(line)
        if match and match.group(1) not in fields:
            fields[match.group(1)] = match.group(2)
    percentiles = {}
    for key, value in fields.items():
        found = _PERCENTILE.match(key)
        if found and _number(value) is not None:
            percentiles[f"p{float(found.group(1)):g}"] = float(value) / 1e6
    mean = _number(fields.get("Mean latency (ns)"))
    pct = f"p{percentile:g}"
    unmet = []
    if fields.get("Performance constraints satisfied", "").upper() == "NO":
        got = percentiles.get(pct)
        shown = f" {got:.1f} ms" if got is not None else ""
        unmet.append(f"latency bound not met: {pct}{shown} > {target_latency_ms:g} ms")
    if fields.get("Min duration satisfied", "").upper() == "NO":
        unmet.append("min duration not met")
    if fields.get("Min queries satisfied", "").upper() == "NO":
        unmet.append("min queries not met")
    if fields.get("Early stopping satisfied", "").upper() == "NO":
        why = next((e for e in early if "need" in e.lower()), early[-1] if early else "")
        unmet.append("early stopping not met" + (f": {why}" if why else ""))
    detail = path.parent / "mlperf_log_detail.txt"
    scheduled = detail_figure(detail, "result_scheduled_samples_per_sec")
    if scheduled is None:
        scheduled = _number(fields.get("Scheduled samples per second"))
    completed = detail_figure(detail, "result_completed_samples_per_sec")
    if completed is None:
        completed = _number(fields.get("Completed samples per second"))
    estimate = _early_stopping_ms(detail, scenario, early)
    per_second = (
        _number(fields.get("Samples per second")) or completed or _number(fields.get("QPS w/o loadgen overhead"))
    )
    if scenario in ("SingleStream", "MultiStream"):
        found_key = next((k for k in fields if k.endswith("percentile latency (ns)") and "th " in k), None)
        latency_ns = _number(fields[found_key]) if found_key else None
        headline = "-"
        if found_key is not None and latency_ns is not None:
            named = f"p{float(found_key.split('th')[0]):g} latency"
            headline = f"{named} {latency_ns / 1e6:.2f} ms (no early-stopping estimate)"
            if estimate is not None:
                headline = f"early-stopping {named} {estimate:.2f} ms"
    elif scenario == "Server":
        headline = f"completed {completed:.2f} samples/s" if completed is not None else "-"
    else:
        headline = f"{per_second:.2f} samples/s" if per_second is not None else "-"
    result = fields.get("Result is", "UNKNOWN")
    need = _NEED.search(" ".join(early))
    low = _number(fields.get("Min latency (ns)"))
    return Summary(
        valid=result == "VALID",
        result=result,
        unmet=tuple(unmet),
        percentiles_ms=percentiles,
        mean_ms=mean / 1e6 if mean is not None else None,
        headline=headline,
        scheduled_qps=scheduled,
        completed_qps=completed,
        samples_per_s=per_second,
        fields=fields,
        min_latency_ms=low / 1e6 if low is not None else None,
        latency_missed=bool(unmet) and unmet[0].startswith("latency bound"),
        queries_needed=(int(need.group(1)), int(need.group(2))) if need else None,
        early_stopping_ms=estimate,
    )


def _early_stopping_ms(detail: Path, scenario: str, early: list[str]) -> float | None:
    """The stream scenarios' MLPerf figure: the detail log's early-stopping latency (ns), else the summary's
    "Early stopping 90.0th percentile estimate" line; None for the other scenarios and without an estimate (0)."""
    key = EARLY_STOPPING_KEY.get(scenario)
    if key is None:
        return None
    ns = detail_figure(detail, key)
    if ns is None:
        found = _ESTIMATE.search(" ".join(early))
        ns = float(found.group(2)) if found else None
    return ns / 1e6 if ns else None


def detail_figure(path: Path, key: str) -> float | None:
    """One figure LoadGen logged in its detail log (``:::MLLOG {"key": ..., "value": ...}``); None if absent."""
    if not path.is_file():
        return None
    needle = f'"key": "{key}"'
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(_DETAIL) and needle in line:
            try:
                value = json.loads(line[len(_DETAIL) :]).get("value")
            except ValueError:
                return None
            return float(value) if isinstance(value, (int, float)) else None
    return None


def interrupted_summary() -> Summary:
    """The summary of a test stopped by Ctrl-C before LoadGen wrote one."""
    return Summary(
        False, "INTERRUPTED", ("interrupted before LoadGen wrote its summary",), {}, None, "-", None, None, None, {}
    )


def accuracy_summary(scored: bool = True) -> Summary:
    """AccuracyOnly: LoadGen issues every sample once and writes no result; the quality meter judges the run, when
    there is something to score it against (``scored``)."""
    headline = "every sample once, scored" if scored else "every sample once, NOT scored"
    return Summary(None, "ACCURACY", (), {}, None, headline, None, None, None, {})
