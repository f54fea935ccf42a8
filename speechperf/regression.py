"""``speechperf diff BASE.json NEW.json``: a baseline against a new run, and the regression gate for CI.

Reads the JSON of ``speechperf bench -o`` or of ``speechperf compare -o`` (both sides of one kind), checks each
``schema_version`` on load, and compares per unit (docs/compare.md, "Regression gate"):

- bench JSON: per stage (``stage1 s2t``) and the ``total``; the statistical unit is the per-sample runtime (each
  sample's median of its repeats);
- compare JSON: per cell (``onnxruntime``, ``torch t2``...), the cascade total, and per cell and stage; the unit is
  one process run (the mean per-sample runtime of the run), compare's own unit.

Per unit: ``new/base`` of the mean with its propagated σ and Welch's two-sided p over the units
(``speechperf.stats``: the one place these are defined), and the ratios of the median, p90 and peak RSS, and of
WER when both runs scored it. A regression on ``--fail-metric`` is ``new/base > 1 + --fail-above`` and, for the
timing metrics, Welch's p < 0.05; where no test can be made (one value on a side) the ratio alone decides and the
output says so. Peak RSS and WER are single figures: their ratio alone decides (a WER that was 0 regresses on any
increase).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from speechperf import stats
from speechperf.benchmark.results import SCHEMA_VERSION as BENCH_SCHEMA
from speechperf.compare.report import SCHEMA_VERSION as COMPARE_SCHEMA
from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import file_problem

METRICS = ("mean", "median", "p90", "peak_rss", "wer")
TIMING_METRICS = ("mean", "median", "p90")
#: environment keys that must match between the two runs (the commit is what is expected to differ)
ENV_KEYS = ("python", "platform", "cpu", "cpu_count", "threads", "device", "backend", "packages")
#: config and option keys that say where results go or how many runs there are, not what is measured
IGNORED_KEYS = frozenset(
    (
        "output",
        "csv_path",
        "md_path",
        "plot_path",
        "html_path",
        "store_path",
        "workdir",
        "jobs",
        "runs",
        "timeout_s",
        "dump_speech_waveforms_dir",
        "dump_waveform_file_prefix",
    )
)


class DiffInputError(SpeechperfError):
    pass


@attrs.frozen
class Unit:
    """What one stage or cell of one run measured: ``values`` are the statistical units (seconds)."""

    name: str
    values: tuple[float, ...]
    median: float | None
    p90: float | None
    peak_rss: float | None
    wer: float | None

    def metric(self, name: str) -> float | None:
        if name == "mean":
            return stats.mean(self.values)
        return getattr(self, name)


@attrs.frozen
class Row:
    name: str
    base: Unit
    new: Unit
    ratio: stats.Ratio | None  # new/base of the mean
    p_value: float | None

    def ratio_of(self, metric: str) -> float | None:
        b, n = self.base.metric(metric), self.new.metric(metric)
        if b is None or n is None:
            return None
        if b == 0:
            return None if n == 0 else float("inf")
        return n / b

    def regressed(self, metric: str, fail_above: float) -> bool | None:
        """True / False; None when the metric is missing on a side."""
        ratio = 1.0 if self.base.metric(metric) == 0 == self.new.metric(metric) else self.ratio_of(metric)
        if ratio is None:
            return None
        if ratio <= 1 + fail_above:
            return False
        if metric in TIMING_METRICS and self.p_value is not None:
            return self.p_value < stats.SIGNIFICANCE
        return True


@attrs.frozen
class Loaded:
    path: Path
    kind: str  # "bench" or "compare"
    data: dict[str, Any]


def load(path: Path) -> Loaded:
    what = shorten_path(path)
    if (problem := file_problem(path)) is not None:  # before the read: a FIFO blocks it, /dev/zero never ends
        raise DiffInputError(f"{what} {problem}; a bench or compare JSON is a file")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DiffInputError(f"{what}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise DiffInputError(f"{what}: not JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise DiffInputError(f"{what}: not a speechperf bench or compare JSON (the top level is no object)")
    if "result" in data and "summary" in data:
        kind, known = "bench", BENCH_SCHEMA
    elif "cells" in data and "runs" in data:
        kind, known = "compare", COMPARE_SCHEMA
    else:
        raise DiffInputError(f"{what}: not a speechperf bench or compare JSON (neither 'result' nor 'cells'+'runs')")
    version = data.get("schema_version")
    if version != known:
        raise DiffInputError(
            f"{what}: {kind} JSON of schema_version {version!r}; this speechperf reads schema_version {known} "
            "(a newer speechperf wrote it, or it is no speechperf file)"
        )
    return Loaded(Path(path), kind, data)


def _p90(values: Sequence[float]) -> float | None:
    return float(np.percentile(values, 90, method="linear")) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _bench_units(data: dict[str, Any]) -> dict[str, Unit]:
    result = data["result"]
    wer = {row["stage"]: row.get("wer") for row in data.get("summary", [])}
    units = {}
    for stage in result["stages"]:
        name = f"stage{stage['index']} {stage['role']}"
        samples = (stage.get("runtime") or {}).get("samples") or []
        values = tuple(statistics.median(s["ns"]) / 1e9 for s in samples)
        memory = stage.get("memory") or {}
        units[name] = Unit(name, values, _median(values), _p90(values), memory.get("peak_mib"), wer.get(name))
    totals = result["totals"]
    values = tuple(totals["per_sample_s"].values())
    units["total"] = Unit("total", values, _median(values), _p90(values), totals.get("peak_mib"), wer.get("total"))
    return units


def _compare_units(data: dict[str, Any]) -> dict[str, Unit]:
    rows = {row["cell"]: row for row in data.get("summary", [])}
    runs: dict[str, list[dict[str, Any]]] = {}
    for run in data["runs"]:
        if run.get("ok") and run.get("timings"):
            runs.setdefault(run["label"], []).append(run["timings"])
    units = {}
    for label, timings in runs.items():
        row = rows.get(label, {})
        wer = row.get("quality_points") if str(row.get("quality_metric") or "").lower() == "wer" else None
        pooled = [v for t in timings for v in t["per_sample_s"].values()]
        values = tuple(statistics.fmean(t["per_sample_s"].values()) for t in timings if t["per_sample_s"])
        units[label] = Unit(label, values, _median(pooled), _p90(pooled), row.get("peak_rss_mib"), wer)
        per_stage: dict[str, tuple[list[float], list[float]]] = {}
        for t in timings:
            for stage in t.get("stages", []):
                name = f"{label} stage{stage['stage']}" + (f" {stage['role']}" if stage.get("role") else "")
                run_values, stage_pooled = per_stage.setdefault(name, ([], []))
                medians = [statistics.median(ns) / 1e9 for ns in stage["ns"].values()]
                if medians:
                    run_values.append(statistics.fmean(medians))
                    stage_pooled.extend(medians)
        if len(per_stage) > 1:  # a one-stage cell's stage is its total
            for name, (run_values, stage_pooled) in per_stage.items():
                units[name] = Unit(name, tuple(run_values), _median(stage_pooled), _p90(stage_pooled), None, None)
    return units


def units(loaded: Loaded) -> dict[str, Unit]:
    return _bench_units(loaded.data) if loaded.kind == "bench" else _compare_units(loaded.data)


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if str(k) not in IGNORED_KEYS:
                out.update(_flat(v, f"{prefix}.{k}"))
        return out
    return {prefix: value}


def _environment(loaded: Loaded) -> dict[str, Any]:
    if loaded.kind == "bench":
        env = loaded.data.get("environment") or {}
    else:
        env = next((r["environment"] for r in loaded.data["runs"] if r.get("environment")), {})
        env = {k: v for k, v in env.items() if k not in ("threads", "backend", "backend_version")}  # per cell
    return {k: env.get(k) for k in ENV_KEYS if k in env}


def differences(base: Loaded, new: Loaded) -> list[str]:
    """One line per thing that differs between the two runs besides the code measured: config, options, inputs,
    thread counts, machine and package versions."""
    left = {**_flat(base.data.get("config") or {}, "config"), **_flat(_environment(base), "environment")}
    right = {**_flat(new.data.get("config") or {}, "config"), **_flat(_environment(new), "environment")}
    if base.kind == "compare":
        left.update(_flat(base.data.get("options") or {}, "options"))
        right.update(_flat(new.data.get("options") or {}, "options"))
        left["cells"], right["cells"] = (sorted(c["label"] for c in d.data["cells"]) for d in (base, new))
    else:
        left["samples"], right["samples"] = (list(d.data["result"]["samples"]) for d in (base, new))
        for key in ("threads", "warmup", "repeat", "backend", "device"):
            left[f"result.{key}"], right[f"result.{key}"] = (d.data["result"].get(key) for d in (base, new))
    keys = sorted(set(left) | set(right))
    return [
        f"{key}: {json.dumps(left.get(key), default=str)} / {json.dumps(right.get(key), default=str)}"
        for key in keys
        if left.get(key) != right.get(key)
    ]


def diff(base: Loaded, new: Loaded) -> list[Row]:
    left, right = units(base), units(new)
    out = []
    for name in [n for n in left if n in right]:
        b, n = left[name], right[name]
        ratio = stats.speed_ratio(b.values, n.values) if b.values and n.values and stats.mean(b.values) else None
        p = stats.welch_p_value(b.values, n.values)
        out.append(Row(name, b, n, ratio, p))
    return out


#: The largest --fail-above: a new run 100 times the base's (10,000% slower) is past any gate worth setting.
FAIL_ABOVE_MAX = 100.0


def parse_percent(text: str) -> float:
    """``5%`` or ``0.05`` -> 0.05."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise DiffInputError(f"--fail-above {text!r}: not a percentage; write e.g. 5% or 0.05") from None
    if not 0 <= value <= FAIL_ABOVE_MAX:  # nan and inf too: they compare false
        raise DiffInputError(
            f"--fail-above {text!r}: must be a finite percentage from 0% to {FAIL_ABOVE_MAX:.0%} ({FAIL_ABOVE_MAX:g})"
        )
    return value


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(rows: Sequence[Row], base: Loaded, new: Loaded, metric: str, fail_above: float | None) -> str:
    """The table: base and new mean ± σ (ms), new/base ± σ, Welch's p, the other ratios, and the verdict."""
    from speechperf import tables

    unit = "sample" if base.kind == "bench" else "run"
    headers = (
        "stage" if base.kind == "bench" else "cell",
        f"base mean ± σ (ms, n {unit}s)",
        f"new mean ± σ (ms, n {unit}s)",
        "new/base",
        "Welch's p",
        "median",
        "p90",
        "peak RSS",
        "WER",
        f"gate ({metric})",
    )

    def ms(u: Unit) -> str:
        m, s = stats.mean(u.values), stats.stdev(u.values)
        return "-" if m is None else f"{stats.mean_sigma(m * 1e3, None if s is None else s * 1e3)} (n={len(u.values)})"

    def verdict(row: Row) -> str:
        if fail_above is None:
            return "-"
        found = row.regressed(metric, fail_above)
        if found is None:
            return f"no {metric} on a side"
        untested = metric in TIMING_METRICS and row.p_value is None
        if found:
            return "REGRESSION" + (" (no test: ratio alone)" if untested else "")
        return "ok" + (" (no test: ratio alone)" if untested else "")

    table = [
        (
            r.name,
            ms(r.base),
            ms(r.new),
            "-" if r.ratio is None else r.ratio.text(),
            "-" if r.p_value is None else f"{r.p_value:.2g}",
            *(_ratio_cell(r.ratio_of(m)) for m in ("median", "p90", "peak_rss", "wer")),
            verdict(r),
        )
        for r in rows
    ]
    title = f"speechperf diff: {shorten_path(new.path)} against {shorten_path(base.path)} ({base.kind} JSON)"
    text = tables.render_table(title, headers, table, left=(headers[0], headers[-1]))
    gate = (
        "no gate (--fail-above not given)"
        if fail_above is None
        else f"gate: {metric} new/base above {1 + fail_above:.3f} with Welch's p < {stats.SIGNIFICANCE} is a regression"
    )
    return text + f"statistical unit: one {unit}; {gate}\n"
