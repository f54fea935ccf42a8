"""``speechperf diff BASE.json NEW.json``: a baseline against a new run, and the regression gate for CI.

Reads two result documents of one kind (``speechperf.results.read``: any schema version it reads) and dispatches on
their ``kind`` (docs/results.md); per unit (docs/compare.md, "Regression gate"):

- bench: per stage (``stage1 s2t``) and the ``total``; the unit is one process run (``bench --runs N``'s runs; a
  plain bench, or a file of schema version 1, is one);
- compare (and compare --best): per cell (``onnxruntime``, ``torch t2``...), the cascade total, and per cell and
  stage; the unit is one process run (the mean per-sample runtime of the run), compare's own unit;
- optimize: per variant (``fp32``, ``ort-dynamic``...); the unit is one process run, as compare's;
- loadgen and serving (compare --scenario): per scenario (loadgen: ``SingleStream``, ``Server peak``...) or cell
  (serving); peak QPS, samples/s and the p90/p99 latencies LoadGen measured, one run (one process) per side.

The process run is the unit of every significance statement: the samples of one process share its allocator, its
thread pools and the machine's load at the time, so a test over them (pseudo-replication) calls a changed load a
regression. For the timing kinds: ``new/base`` of the mean with its propagated σ and Welch's two-sided p over the
runs (``speechperf.stats``: the one place these are defined), and the ratios of the median, p90 and peak RSS, and of
WER when both runs scored it. A regression on ``--fail-metric`` is the figure worse by more than ``--fail-above``
(``new/base > 1 + X``; for a rate, where higher is better, ``base/new > 1 + X``: the time per sample grew by more
than X) and, for the timing metrics, worse by more than X even at the lower 95% confidence bound of the ratio over
the runs, a between-session drift per side (``--drift``, ``DRIFT``) in its variance (``stats.ratio_lower_bound``):
the runs of one side run back to back and cannot show how far the machine moves between the two sessions. With
fewer than two runs on a side there is no test and no regression ("no significance test: one process per side"),
unless ``--sample-level`` asks for the test over the samples. Peak RSS, WER and the serving figures (a single
LoadGen run per side by design) are gated on the ratio alone, and the output says so. The default metric, ``headline``, is the mean for the timing kinds and each
scenario's own figure for the serving ones (Server peak: peak QPS; Offline: samples/s; SingleStream: p90;
MultiStream and a Server at a fixed rate: p99). ``load_warning``: one line when the two sides timed under
different loads; ``wait_warning``: one when a side's runs waited for a CPU (their own schedstat wait): for different
loads, or NEW having waited, no time or rate is gated without ``--gate-under-load``.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from speechperf import stats
from speechperf.benchmark.report import unit_seconds
from speechperf.errors import SpeechperfError, shorten_path
from speechperf.exports import Exports
from speechperf.lifecycle import lifecycle
from speechperf.results import Document, read
from speechperf.results.load import load_warning, side_wait, wait_warning, waited_sides
from speechperf.results.loadgen_table import PEAK
from speechperf.store.record import environment_of, row_name

log = logging.getLogger(__name__)

#: The figures ``--fail-metric`` may name; ``headline``: each unit's own (see the module's doc).
METRICS = (
    "headline",
    "mean",
    "median",
    "p90",
    "p99",
    "peak_rss",
    "wer",
    "samples_per_s",
    "peak_qps",
    "completed_qps",
    "early_stopping",
)
TIMING_METRICS = ("mean", "median", "p90")
#: Figures the machine's load does not move: gated even when the two sides timed under different loads.
LOAD_FREE = frozenset({"peak_rss", "wer"})
#: Rates: a drop is a regression.
HIGHER_IS_BETTER = frozenset({"samples_per_s", "peak_qps", "completed_qps"})
#: The figure each metric is, by its name in the documents (``speechperf.results.figures``).
FIGURE = {
    "mean": "mean_ms",
    "median": "median_ms",
    "p90": "p90_ms",
    "p99": "p99_ms",
    "peak_rss": "peak_rss_mib",
    "wer": "wer",
    "samples_per_s": "samples_per_s",
    "peak_qps": "peak_qps",
    "completed_qps": "completed_qps",  # MLPerf's Server figure
    "early_stopping": "early_stopping_ms",  # MLPerf's SingleStream / MultiStream figure
}
SERVING_KINDS = ("serving", "loadgen")
#: The serving figures diff shows (those a side has), in this order: MLPerf's figures as the current checker reads
#: them (Server ``completed_qps``, the streams' ``early_stopping``) beside the others.
SERVING_SHOWN = ("peak_qps", "completed_qps", "samples_per_s", "early_stopping", "p90", "p99")
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
    """What one stage, cell, variant or scenario of one document measured. ``values``: per process run, its mean
    per-sample runtime (seconds; none for a serving figure): the statistical unit; ``samples``: every per-sample
    runtime of every run, tested only with ``--sample-level``; ``figures``: the single figures by metric name (the
    timing kinds' in seconds, the serving kinds' in their documents' units: ms, 1/s)."""

    name: str
    values: tuple[float, ...]
    figures: Mapping[str, float | None]
    headline: str = "mean"  #: what ``--fail-metric headline`` means for this unit
    result: str | None = None  #: a serving run's VALID / INVALID
    samples: tuple[float, ...] = ()
    #: a serving figure: one LoadGen run's single value by design, gated on its ratio alone (docs/loadgen.md)
    ratio_gated: bool = False
    #: a Server peak search's bracket in target rates (highest VALID, lowest that missed the bound; None: no such
    #: trial): where its peak lies, which the gate reads rather than the ratio alone (``Row.brackets_show``)
    bracket: tuple[float | None, float | None] | None = None

    def resolve(self, metric: str) -> str:
        return self.headline if metric == "headline" else metric

    def metric(self, name: str) -> float | None:
        name = self.resolve(name)
        if name == "mean" and self.values:
            return stats.mean(self.values)
        return self.figures.get(name)


@attrs.frozen
class Row:
    name: str
    base: Unit
    new: Unit
    ratio: stats.Ratio | None  # new/base of the mean
    p_value: float | None
    unit: str = "run"  #: what the test is over: "run" (one process) or "sample" (--sample-level)
    #: the two sides timed under different loads (``speechperf.results.load.load_warning``): a time or rate worse by
    #: more than the threshold may be the machine's, so it is not gated (``--gate-under-load`` gates it anyway)
    loads_differ: bool = False
    #: the lower confidence bound of new/base over the units, a between-session drift included (``stats.Bound``)
    bound: stats.Bound | None = None
    #: NEW's runs waited for a CPU (``speechperf.results.load.wait_warning``): not gated either, as loads_differ (a
    #: BASE that waited is slower, which can hide a regression but not make one)
    waited: bool = False

    @property
    def counts(self) -> tuple[int, int]:
        """The units tested on each side (a serving figure: one LoadGen run on each)."""
        if self.base.ratio_gated and self.new.ratio_gated:
            return 1, 1
        if self.unit == "sample":
            return len(self.base.samples), len(self.new.samples)
        return len(self.base.values), len(self.new.values)

    @property
    def untested(self) -> str | None:
        """Why no significance test was made (``no significance test: one process per side``); None when one was."""
        if self.p_value is not None or self.bound is not None:
            return None
        base, new = self.counts
        if self.unit == "run" and base <= 1 and new <= 1:
            return "no significance test: one process per side"
        if min(base, new) < 2:
            side = "BASE" if base < 2 else "NEW"
            return f"no significance test: {max(min(base, new), 0)} {self.unit}(s) on {side}, a test needs 2 per side"
        return f"no significance test: every {self.unit} gave the same figure"

    def ratio_of(self, metric: str) -> float | None:
        """new/base of ``metric``; None when a side lacks it."""
        b, n = self.base.metric(metric), self.new.metric(metric)
        if b is None or n is None:
            return None
        if b == 0:
            return None if n == 0 else float("inf")
        return n / b

    def worse_by(self, metric: str) -> float | None:
        """How many times worse NEW is on ``metric``: new/base, or base/new for a rate (higher is better)."""
        name = self.base.resolve(metric)
        b, n = self.base.metric(name), self.new.metric(name)
        if b is None or n is None:
            return None
        if b == n:
            return 1.0
        if name in HIGHER_IS_BETTER:
            return float("inf") if n == 0 else b / n
        return float("inf") if b == 0 else n / b

    def held_by_load(self, metric: str) -> bool:
        """The sides' loads differ, or NEW waited for a CPU, and ``metric`` is one the load moves (a time or a
        rate)."""
        return (self.loads_differ or self.waited) and self.base.resolve(metric) not in LOAD_FREE

    def tested(self, metric: str) -> bool:
        """``metric`` is gated on its lower confidence bound (a timing figure over units), not on its ratio alone."""
        return self.base.resolve(metric) in TIMING_METRICS and not self.base.ratio_gated

    def low(self, metric: str) -> float | None:
        """The lower confidence bound of how many times worse ``metric`` is: its ratio moved down by as much as the
        bound of the means lies below their ratio (``stats.ratio_lower_bound``); None untested."""
        worse = self.worse_by(metric)
        if worse is None or self.bound is None or not self.tested(metric):
            return None
        return worse * self.bound.factor

    def brackets_show(self, metric: str, fail_above: float) -> bool | None:
        """Two peak searches' brackets on ``peak_qps``: True when BASE's lowest possible peak (its highest VALID
        rate) is above NEW's highest possible one (its lowest missed rate) by more than ``fail_above``, False when
        the brackets leave room for no such drop; None when a side kept no bracket (the ratio alone decides)."""
        if self.base.resolve(metric) != "peak_qps" or self.base.bracket is None or self.new.bracket is None:
            return None
        base_low, new_high = self.base.bracket[0], self.new.bracket[1]
        if base_low is None or new_high is None:  # BASE's peak may be 0, or NEW's unbounded: no drop is shown
            return False
        return new_high <= 0 or base_low / new_high > 1 + fail_above

    def regressed(self, metric: str, fail_above: float) -> bool | None:
        """True / False; None when the metric is missing on a side. A timing figure regressed when even the lower
        bound of its ratio is above ``1 + fail_above`` (worse by more than the threshold beyond the runs' spread
        and the drift between sessions); the other figures when their ratio is."""
        worse = self.worse_by(metric)
        if worse is None:
            return None
        if worse <= 1 + fail_above or self.held_by_load(metric):
            return False
        if self.brackets_show(metric, fail_above) is False:
            return False
        if self.tested(metric):  # significant, or none
            low = self.low(metric)
            return low is not None and low > 1 + fail_above
        return True


@attrs.frozen
class Loaded:
    path: Path
    doc: Document

    @property
    def kind(self) -> str:
        return self.doc.kind


def load(path: Path) -> Loaded:
    """The result document at ``path``, of a kind diff can gate; anything else is one line (exit 2)."""
    doc = read(path)
    if doc.kind not in UNITS:
        raise DiffInputError(
            f"{shorten_path(path)}: a {doc.kind} document has no figure to gate; diff takes {', '.join(UNITS)} documents"
        )
    return Loaded(Path(path), doc)


def _p90(values: Sequence[float]) -> float | None:
    return float(np.percentile(values, 90, method="linear")) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _timing(name: str, values: Sequence[float], pooled: Sequence[float], peak_rss: Any, wer: Any) -> Unit:
    figures = {"median": _median(pooled), "p90": _p90(pooled), "peak_rss": peak_rss, "wer": wer}
    return Unit(name, tuple(values), figures, samples=tuple(pooled))


def bench_runs(doc: Document) -> list[dict[str, dict[str, float]]]:
    """Per finished process run of a bench document, each stage's and the total's per-sample runtimes (seconds):
    ``bench --runs N``'s ``runs``; one run, read from ``result``, in a document of one process (schema version 1, or
    2 before ``--runs``)."""
    runs = [r["per_sample_s"] for r in doc.get("runs") or () if r.get("ok") and r.get("per_sample_s")]
    return runs or [unit_seconds(doc["result"])]


def _bench_units(doc: Document) -> dict[str, Unit]:
    runs = bench_runs(doc)
    rows = {row.get("stage"): row for row in doc.rows}
    units = {}
    for name in runs[0]:
        per_run = [list(run[name].values()) for run in runs if run.get(name)]
        pooled = [v for run in per_run for v in run]
        row = rows.get(name, {})
        values = [statistics.fmean(run) for run in per_run]
        units[name] = _timing(name, values, pooled, row.get("peak_rss_mib"), row.get("wer"))
    return units


def _compare_wer(row: dict[str, Any]) -> float | None:
    if row.get("wer") is not None:
        return row["wer"]
    if str(row.get("quality_metric") or "").lower() == "wer" and row.get("quality_points") is not None:
        return row["quality_points"] / 100  # version 1 kept compare's WER in points
    return None


def _compare_units(doc: Document) -> dict[str, Unit]:
    rows = {row.get("cell"): row for row in doc.rows}
    runs: dict[str, list[dict[str, Any]]] = {}
    for run in doc["runs"]:
        if run.get("ok") and run.get("timings"):
            runs.setdefault(run["label"], []).append(run["timings"])
    units = {}
    for label, timings in runs.items():
        row = rows.get(label, {})
        pooled = [v for t in timings for v in t["per_sample_s"].values()]
        values = [statistics.fmean(t["per_sample_s"].values()) for t in timings if t["per_sample_s"]]
        units[label] = _timing(label, values, pooled, row.get("peak_rss_mib"), _compare_wer(row))
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
                units[name] = _timing(name, run_values, stage_pooled, None, None)
    return units


def _optimize_units(doc: Document) -> dict[str, Unit]:
    """Per variant: each finished process run's mean per-sample runtime (the body's ``runs``), as compare's."""
    per_run: dict[str, list[float]] = {}
    for run in doc.get("runs") or ():
        ms = run.get("mean_ms", run.get("latency_ms"))
        if run.get("returncode") == 0 and isinstance(ms, (int, float)):
            per_run.setdefault(run["variant"], []).append(ms / 1e3)
    units = {}
    for row in doc.rows:
        name = row_name("optimize", row)
        if name is None:
            continue
        values = per_run.get(name, [])
        unit = _timing(name, values, values, row.get("peak_rss_mib"), row.get("wer"))
        if not values and row.get("mean_ms") is not None:  # no runs kept: the row's mean, as a single figure
            unit = attrs.evolve(unit, figures={**unit.figures, "mean": row["mean_ms"] / 1e3})
        units[name] = unit
    return units


def _scenario_headline(scenario: Any, peak: bool) -> str:
    """A scenario's own figure (MLPerf's): a Server peak search's rate; otherwise Offline's samples/s, the
    latency percentile of the streams, and p99 for a Server at a fixed rate (its latency bound is on p99)."""
    if peak:
        return "peak_qps"
    return {"Offline": "samples_per_s", "SingleStream": "p90", "MultiStream": "p99"}.get(str(scenario), "p99")


def _serving_figures(row: dict[str, Any]) -> dict[str, float | None]:
    got = {m: row.get(FIGURE[m]) for m in SERVING_SHOWN}
    # version 1 named a serving row's figure in ``metric`` and put it in ``value``, its latency in ``latency_ms``
    if row.get("metric") in ("peak_qps", "samples_per_s") and got[row["metric"]] is None:
        got[row["metric"]] = row.get("value")
    if row.get("latency_ms") is not None and row.get("percentile") is not None:
        got.setdefault(f"p{row['percentile']:g}", None)
        if got[f"p{row['percentile']:g}"] is None:
            got[f"p{row['percentile']:g}"] = row["latency_ms"]
    return got


def _serving_units(doc: Document) -> dict[str, Unit]:
    scenario = doc.get("scenario")
    units = {}
    for row in doc.rows:
        name = row_name("serving", row)
        if name is None:
            continue
        where = row.get("scenario", scenario)
        headline = _scenario_headline(where, where == "Server")
        if where in ("SingleStream", "MultiStream") and row.get("percentile") is not None:
            headline = f"p{row['percentile']:g}"
        units[name] = Unit(name, (), _serving_figures(row), headline, row.get("result"), ratio_gated=True)
    return units


def _loadgen_units(doc: Document) -> dict[str, Unit]:
    units = {}
    for row in doc.rows:
        name = row_name("loadgen", row)
        if name is None:  # a peak search's trial
            continue
        headline = _scenario_headline(row.get("scenario"), row.get("mode") == PEAK)
        bracket = None
        if row.get("mode") == PEAK and row.get("converged") is not None:  # written with its bracket
            bracket = (row.get("bracket_low_qps"), row.get("bracket_high_qps"))
        unit = Unit(name, (), _serving_figures(row), headline, row.get("result"), ratio_gated=True, bracket=bracket)
        units[name] = unit
    return units


#: Each kind diff gates, with how its units are read.
UNITS: dict[str, Callable[[Document], dict[str, Unit]]] = {
    "bench": _bench_units,
    "compare": _compare_units,
    "compare-best": _compare_units,
    "optimize": _optimize_units,
    "serving": _serving_units,
    "loadgen": _loadgen_units,
}


def units(loaded: Loaded) -> dict[str, Unit]:
    return UNITS[loaded.kind](loaded.doc)


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if str(k) not in IGNORED_KEYS:
                out.update(_flat(v, f"{prefix}.{k}"))
        return out
    return {prefix: value}


def _environment(loaded: Loaded) -> dict[str, Any]:
    env = environment_of(loaded.doc)
    if loaded.kind in ("compare", "compare-best", "serving"):  # per cell, not per run
        env = {k: v for k, v in env.items() if k not in ("threads", "backend", "backend_version")}
    return {k: env.get(k) for k in ENV_KEYS if k in env}


def _own(loaded: Loaded) -> dict[str, Any]:
    """What the kind itself says about what it measured, beyond its config and environment."""
    doc = loaded.doc
    if loaded.kind == "bench":
        result = doc["result"]
        out = {"samples": list(result["samples"])}
        out.update({f"result.{k}": result.get(k) for k in ("threads", "warmup", "repeat", "backend", "device")})
        return out
    out = {}
    for key in ("options", "scenario_options"):
        out.update(_flat(doc.get(key) or {}, key))
    if loaded.kind in ("compare", "compare-best"):
        out["cells"] = sorted(c["label"] for c in doc.get("cells") or ())
    for key in ("backend", "methods", "calibration_size", "scenario"):
        if doc.get(key) is not None:
            out[key] = doc.get(key)
    return out


def differences(base: Loaded, new: Loaded) -> list[str]:
    """One line per thing that differs between the two runs besides the code measured: config, options, inputs,
    thread counts, machine and package versions."""
    left, right = (
        {**_flat(d.doc.config or {}, "config"), **_flat(_environment(d), "environment"), **_own(d)} for d in (base, new)
    )
    keys = sorted(set(left) | set(right))
    return [
        f"{key}: {json.dumps(left.get(key), default=str)} / {json.dumps(right.get(key), default=str)}"
        for key in keys
        if left.get(key) != right.get(key)
    ]


#: The drift between two sessions of the same runs, per side (a relative standard deviation), the gate allows for
#: by default: measured on the project's 2-core machine (docs/compare.md, "Regression gate": Drift).
DRIFT = 0.03


def diff(
    base: Loaded,
    new: Loaded,
    sample_level: bool = False,
    loads_differ: bool = False,
    drift: float = DRIFT,
    waited: bool = False,
) -> list[Row]:
    """Per unit both documents have: new/base of the mean, Welch's p and the gate's lower bound (``drift`` per
    side included) over the process runs, or, with ``sample_level``, over every per-sample runtime (where both
    sides have them; optimize keeps none). ``loads_differ``, ``waited``: the sides timed under different loads, or
    NEW waited for a CPU, so no time or rate of theirs is gated."""
    left, right = units(base), units(new)
    out = []
    for name in [n for n in left if n in right]:
        b, n = left[name], right[name]
        unit = "sample" if sample_level and b.samples and n.samples else "run"
        xs, ys = (b.samples, n.samples) if unit == "sample" else (b.values, n.values)
        ratio = stats.speed_ratio(xs, ys) if xs and ys and stats.mean(xs) else None
        bound = stats.ratio_lower_bound(xs, ys, drift)
        out.append(Row(name, b, n, ratio, stats.welch_p_value(xs, ys), unit, loads_differ, bound, waited))
    return out


#: The largest --fail-above: a new run 100 times the base's (10,000% slower) is past any gate worth setting.
FAIL_ABOVE_MAX = 100.0


#: The largest --drift: a machine whose sessions move by more than half is no place for a gate.
DRIFT_MAX = 0.5


def parse_percent(text: str, option: str = "--fail-above", most: float = FAIL_ABOVE_MAX) -> float:
    """``5%`` or ``0.05`` -> 0.05."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise DiffInputError(f"{option} {text!r}: not a percentage; write e.g. 5% or 0.05") from None
    if not 0 <= value <= most:  # nan and inf too: they compare false
        raise DiffInputError(f"{option} {text!r}: must be a finite percentage from 0% to {most:.0%} ({most:g})")
    return value


def verdict(row: Row, metric: str, fail_above: float | None) -> str:
    if fail_above is None:
        return "-"
    found = row.regressed(metric, fail_above)
    name = row.base.resolve(metric)
    if found is None:
        return f"no {name} on a side"
    worse = row.worse_by(metric) or 1.0
    if row.held_by_load(metric) and worse > 1 + fail_above:
        return "not gated (waited for a CPU)" if row.waited else "not gated (loads differ)"
    if not found and row.brackets_show(metric, fail_above) is False and worse > 1 + fail_above:
        return "not gated (brackets overlap)"
    if found or not row.tested(metric):
        return "REGRESSION" if found else "ok"
    if row.untested is not None:
        return "not gated (no test)"  # a timing figure without a test gates nothing, within the threshold or not
    return "ok" if worse <= 1 + fail_above else "not significant"


def _serving_figures_shown(row: Row, metric: str) -> list[dict[str, Any]]:
    """The lines of a serving unit in the table: each figure a side has, then the gated one and the headline."""
    gated = row.base.resolve(metric)
    names = [m for m in SERVING_SHOWN if row.base.metric(m) is not None or row.new.metric(m) is not None]
    names += [m for m in (gated, row.base.headline) if m not in names and m in row.base.figures]
    names += [gated] if gated not in names else []
    return [
        {
            "metric": m,
            "figure": FIGURE.get(m, f"{m}_ms"),
            "base": row.base.metric(m),
            "new": row.new.metric(m),
            "new_over_base": row.ratio_of(m),
            "higher_is_better": m in HIGHER_IS_BETTER,
        }
        for m in names
    ]


#: The timing kinds' times, which ``Unit`` keeps in seconds and the diff document in milliseconds.
SECONDS = frozenset({"mean", "median", "p90", "p99"})


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1e3


def _side(unit: Unit, tested_over: str) -> tuple[float | None, float | None]:
    """The mean (ms) and the σ (ms) of what the test is over, as the table shows them."""
    return _ms(unit.metric("mean")), _ms(stats.stdev(unit.samples if tested_over == "sample" else unit.values))


def _figure_of(unit: Unit, name: str) -> float | None:
    """``name``'s figure in the documents' unit (``speechperf.results.figures``): a timing kind's time in ms."""
    value = unit.metric(name)
    return _ms(value) if name in SECONDS and not unit.ratio_gated else value


def _row(row: Row, kind: str, metric: str, fail_above: float | None) -> dict[str, Any]:
    from speechperf.results.figures import unit_of

    name = row.base.resolve(metric)
    base_units, new_units = row.counts
    (base_mean, base_sd), (new_mean, new_sd) = _side(row.base, row.unit), _side(row.new, row.unit)
    figure = FIGURE.get(name, f"{name}_ms")
    out: dict[str, Any] = {
        "unit": row.name,
        "metric": name,
        # ``base`` and ``new`` are this figure, in its documents' unit, named (the same for every kind)
        "figure": figure,
        "figure_unit": unit_of(figure),
        "base": _figure_of(row.base, name),
        "new": _figure_of(row.new, name),
        "new_over_base": row.ratio_of(name),
        "p_value": row.p_value,
        "tested_over": row.unit,
        "base_units": base_units,
        "new_units": new_units,
        "untested": row.untested,
        "verdict": verdict(row, metric, fail_above),
        # what the console shows beside the gated figure (docs/results.md, "diff")
        "base_runs": len(row.base.values),
        "new_runs": len(row.new.values),
        "base_mean_ms": base_mean,
        "base_stdev_ms": base_sd,
        "new_mean_ms": new_mean,
        "new_stdev_ms": new_sd,
        # the gate's lower confidence bound of how many times worse the gated figure is (None: no test)
        "worse_low": row.low(metric),
        "mean_ratio": None if row.ratio is None else row.ratio.value,
        "mean_ratio_sigma": None if row.ratio is None else row.ratio.sigma,
        **{f"{m}_ratio": row.ratio_of(m) for m in ("median", "p90", "peak_rss", "wer")},
        "base_result": row.base.result,
        "new_result": row.new.result,
    }
    if kind in SERVING_KINDS:
        out["figures"] = _serving_figures_shown(row, metric)
        if row.base.bracket is not None and row.new.bracket is not None:  # two peak searches: what decides
            out["base_bracket"], out["new_bracket"] = list(row.base.bracket), list(row.new.bracket)
    return out


def document(
    rows: Sequence[Row],
    base: Loaded,
    new: Loaded,
    metric: str,
    fail_above: float | None,
    exit_code: int,
    drift: float = DRIFT,
) -> Document:
    """The diff as a result document (kind ``diff``): a row per stage, cell, variant or scenario with the gated
    figure on each side (``figure``, in its documents' unit ``figure_unit``: times in ms), NEW over BASE, the test, the
    verdict, and every figure the console shows beside them (``speechperf.views.diff`` renders it)."""
    body = {
        "base": str(base.path),
        "new": str(new.path),
        "compared_kind": base.kind,
        "fail_metric": metric,
        "fail_above": fail_above,
        "loads_differ": any(r.loads_differ for r in rows),
        "drift": drift,
        "confidence": stats.GATE_CONFIDENCE,
        "wait_share": {"base": side_wait(base.doc), "new": side_wait(new.doc)},
        "waited": any(r.waited for r in rows),
        "exit_code": exit_code,
    }
    out = [_row(row, base.kind, metric, fail_above) for row in rows]
    return Document(kind="diff", rows=out, complete=True, body=body)


@attrs.frozen
class DiffOptions:
    """``speechperf diff``'s options: the two documents, the gate and where the diff goes."""

    base_path: Path
    new_path: Path
    fail_above: str | None = None  #: as given (``5%``, ``0.05``); checked by ``parse_percent``
    fail_metric: str = "headline"
    allow_different: bool = False
    sample_level: bool = False
    gate_under_load: bool = False
    drift: str | None = None  #: as given (``3%``, ``0.03``); None: ``DRIFT``
    exports: Exports = Exports()
    wide: bool = False  #: --wide: the console's every column


def run_diff(options: DiffOptions) -> int:
    """Read both documents, refuse what is not the same measurement, diff them, and show, write and keep the diff
    through the command lifecycle; returns the exit code (1: a significant regression above the threshold)."""
    with lifecycle(options.exports, wide=options.wide) as run:
        threshold = None if options.fail_above is None else parse_percent(options.fail_above)
        drift = DRIFT if options.drift is None else parse_percent(options.drift, "--drift", DRIFT_MAX)
        base, new = load(options.base_path), load(options.new_path)
        if base.kind != new.kind:
            raise DiffInputError(
                f"BASE is a {base.kind} document and NEW a {new.kind} document: diff compares two documents of one kind"
            )
        differs = differences(base, new)
        for line in differs:
            log.warning("warning: BASE and NEW differ: %s", line)
        if differs and not options.allow_different:
            raise DiffInputError(
                f"BASE and NEW differ in {len(differs)} respect(s) (listed above, first: {differs[0]}); they are not "
                "the same measurement: pass --allow-different to compare them anyway"
            )
        load_line, wait_line = load_warning(base.doc, new.doc), wait_warning(base.doc, new.doc)
        for warned in (load_line, wait_line):
            if warned:
                log.warning("%s", warned)
        held = not options.gate_under_load
        new_waited = "NEW" in waited_sides(base.doc, new.doc)  # a BASE that waited only hides a regression
        rows = diff(base, new, options.sample_level, bool(load_line) and held, drift, new_waited and held)
        if not rows:
            raise DiffInputError(
                "BASE and NEW have no stage, cell, variant or scenario in common: there is nothing to compare"
            )
        metric = options.fail_metric
        code = 1 if any(threshold is not None and r.regressed(metric, threshold) for r in rows) else 0
        return run.finish(document(rows, base, new, metric, threshold, code, drift), code)
