"""Per-cell figures and the ranking, from the bench JSON each child wrote.

The statistical unit of the ranking is one process run: a run's value is the mean over samples of the per-sample
runtime (the cascade total, each sample's runtime being the median of its repeats). ``Time (mean ± σ)`` and
``Range (min … max)`` are over those run values (n = the runs of the cell that finished), and the speed ratios,
their sigma and Welch's p-value (``speechperf.stats``) use them too, so drift between processes counts as noise
instead of being averaged away inside one. Median, p90 and p99 are over every per-sample runtime of every run,
pooled (numpy's linear percentiles). RTF is the pooled runtime over the pooled audio seconds; peak memory the max
over runs; FLOPs per sample as the children counted them; the first-call-per-shape cost the median over the runs
of each run's total, called when most runs called it (``speechperf.meters.first_call``). With ``batch_size`` > 1
a per-sample runtime is its batch's time over the batch's size (``speechperf.benchmark.batching``); the latency per
batch is the mean over every timed batch of every run, and throughput (samples/s) every run's samples over their
summed runtime.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from speechperf import length_cost, stats
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.meters import first_call, roofline
from speechperf.results import DocumentError
from speechperf.results import read as read_document


@attrs.frozen
class CellSummary:
    cell: Cell
    run_values: tuple[float, ...]  # seconds: per finished run, the mean per-sample runtime
    per_sample: tuple[float, ...]  # seconds: every per-sample runtime of every finished run
    rtf: float | None
    rtf_audio: str | None
    peak_mib: float | None
    footprint_mib: float | None
    flops_per_sample: float | None
    flops_source: str | None
    failures: tuple[RunResult, ...]
    environments: tuple[dict[str, Any], ...]
    runs: tuple[dict[str, Any], ...]  # per finished run: run index and its raw timings
    first_calls: tuple[first_call.ShapeCost, ...] = ()  # per finished run that could estimate it
    batch_size: int | None = None  # as the children ran it
    batch_seconds: tuple[float, ...] = ()  # every timed batch of every finished run (a cascade's: summed)

    @property
    def batch_latency(self) -> float | None:
        """Seconds: the mean latency per batch, over every batch of every run."""
        return statistics.fmean(self.batch_seconds) if self.batch_seconds else None

    @property
    def samples_per_s(self) -> float | None:
        """Throughput: every run's timed samples over their summed runtime."""
        total = sum(self.per_sample)
        return len(self.per_sample) / total if total > 0 else None

    @property
    def audio_s_per_s(self) -> float | None:
        """Audio seconds processed per second: 1 / RTF."""
        return 1.0 / self.rtf if self.rtf else None

    #: stage ("stage1 s2t", ..., "total") -> its roofline columns (speechperf.meters.roofline.COLUMNS), the median
    #: over the finished runs (the most frequent binding roof)
    roofline: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    @property
    def label(self) -> str:
        return self.cell.label

    @property
    def ok(self) -> bool:
        return bool(self.run_values)

    @property
    def mean(self) -> float | None:
        return stats.mean(self.run_values)

    @property
    def stdev(self) -> float | None:
        return stats.stdev(self.run_values)

    @property
    def first_call_per_shape(self) -> first_call.ShapeCost | None:
        return first_call.over_runs(self.first_calls)

    def percentile(self, q: float) -> float | None:
        return float(np.percentile(self.per_sample, q, method="linear")) if self.per_sample else None


def _read(path: str) -> dict[str, Any] | None:
    """A child's bench document, as the current schema (``rows``, ``result``, ``environment``) whichever version
    of speechperf wrote it; None when it cannot be read."""
    try:
        return read_document(path, kinds=("bench",)).to_json()
    except DocumentError:
        return None


def check_threads(result: RunResult, cell: Cell, data: dict[str, Any]) -> RunResult:
    """A run whose child recorded another thread count than its cell's is a failed run (the column is unfair)."""
    seen = {data["result"].get("threads"), data["environment"].get("threads")}
    if seen == {cell.threads}:
        return result
    return attrs.evolve(
        result,
        ok=False,
        reason=f"the child ran with {sorted(seen, key=str)} threads, not {cell.threads} as every cell of its column",
    )


def summarize(cells: Sequence[Cell], results: Sequence[RunResult]) -> list[CellSummary]:
    out = []
    for cell in cells:
        values, pooled, envs, runs, failures, first_calls = [], [], [], [], [], []
        placed: list[list[dict[str, Any]]] = []
        batch_seconds: list[float] = []
        batch_size = None
        runtime_s = audio_s = 0.0
        rtf_audio = peak = footprint = flops = flops_source = None
        for result in (r for r in results if r.label == cell.label):
            data = _read(result.json_path) if result.ok else None
            if result.ok and data is None:
                result = attrs.evolve(result, ok=False, reason="its result JSON cannot be read")
            if data is not None:
                result = check_threads(result, cell, data)
            if not result.ok or data is None:  # data is None only for a run that is not ok (just above)
                failures.append(result)
                continue
            totals = data["result"]["totals"]
            per_sample = totals["per_sample_s"]
            if not per_sample:
                failures.append(attrs.evolve(result, ok=False, reason="no sample was timed"))
                continue
            values.append(statistics.fmean(per_sample.values()))
            pooled.extend(per_sample.values())
            batch_size = data["result"].get("batch_size", batch_size)
            batch_seconds.extend(b["seconds"] for b in (totals.get("batching") or {}).get("batches", ()))
            envs.append(data["environment"])
            placed.append(data.get("rows") or [])
            if totals.get("first_call_per_shape"):
                first_calls.append(first_call.ShapeCost(**totals["first_call_per_shape"]))
            runs.append(
                {
                    "run": result.run,
                    "per_sample_s": per_sample,
                    "stages": [_raw_timings(s) for s in data["result"]["stages"]],
                }
            )
            if totals.get("rtf"):
                runtime_s += totals["rtf"]["total_runtime_s"]
                audio_s += totals["rtf"]["total_audio_s"]
                rtf_audio = totals["rtf"]["audio"]
            if totals.get("peak_mib") is not None:
                peak = max(peak or 0.0, totals["peak_mib"])
                footprint = max(footprint or 0.0, totals["footprint_mib"] or 0.0)
            flops, flops_source = totals.get("flops_per_sample") or flops, totals.get("flops_source") or flops_source
        out.append(
            CellSummary(
                cell,
                tuple(values),
                tuple(pooled),
                runtime_s / audio_s if audio_s else None,
                rtf_audio,
                peak,
                footprint,
                flops,
                flops_source,
                tuple(failures),
                tuple(envs),
                tuple(runs),
                tuple(first_calls),
                batch_size,
                tuple(batch_seconds),
                _roofline_over_runs(placed),
            )
        )
    return out


def _roofline_over_runs(runs: list[list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for rows in runs:
        for row in rows:
            by_stage.setdefault(str(row.get("stage")), []).append(row)
    out = {}
    for stage, rows in by_stage.items():
        merged: dict[str, Any] = {}
        for key in roofline.COLUMNS:
            seen = [r[key] for r in rows if r.get(key) is not None]
            if not seen:
                merged[key] = None
            elif isinstance(seen[0], str):
                merged[key] = max(set(seen), key=seen.count)
            else:
                merged[key] = statistics.median(seen)
        out[stage] = merged
    return out


def _raw_timings(stage: dict[str, Any]) -> dict[str, Any]:
    """One stage's raw timings of one run: every timed repeat, in ns, per sample."""
    runtime = stage.get("runtime") or {}
    rtf = stage.get("rtf") or {}
    return {
        "stage": stage["index"],
        "role": stage.get("role"),
        "label": stage["label"],
        "ns": {s["sample_id"]: s["ns"] for s in runtime.get("samples", [])},
        "audio": rtf.get("audio"),
        "audio_s": rtf.get("audio_per_sample") or {},
        "padded_to_s": stage.get("padded_to_s"),
    }


def length_fits(summary: CellSummary) -> dict[str, length_cost.LengthFit]:
    """Per stage of a cell (``stage1 vad``): each sample's median runtime over the runs (the median of its
    repeats in each run) against its audio seconds."""
    by_stage: dict[str, dict[str, list[float]]] = {}
    audio: dict[str, tuple[str | None, dict[str, float]]] = {}
    padded: dict[str, float | None] = {}
    for run in summary.runs:
        for stage in run.get("stages", []):
            name = f"stage{stage['stage']} {stage.get('role')}"
            per_sample = by_stage.setdefault(name, {})
            for sid, ns in stage["ns"].items():
                per_sample.setdefault(sid, []).append(statistics.median(ns) / 1e9)
            side, seconds = audio.setdefault(name, (stage.get("audio"), {}))
            seconds.update(stage.get("audio_s") or {})
            padded[name] = stage.get("padded_to_s")
    fits = {}
    for name, per_sample in by_stage.items():
        side, seconds = audio[name]
        ids = [sid for sid in per_sample if sid in seconds]
        fits[name] = length_cost.fit(
            [seconds[sid] for sid in ids], [statistics.median(per_sample[sid]) for sid in ids], side, padded[name]
        )
    return fits


def groups(summaries: Sequence[CellSummary]) -> list[list[CellSummary]]:
    """The sets of cells ranked against each other: with several backends, the cells that share threads and sweep
    values (a column); with one backend, all cells (thread counts or presets against each other)."""
    if len({s.cell.backend for s in summaries}) <= 1:
        return [list(summaries)]
    by_group: dict[tuple, list[CellSummary]] = {}
    for s in summaries:
        by_group.setdefault(s.cell.group, []).append(s)
    return list(by_group.values())


def rankings(summaries: Sequence[CellSummary]) -> list[list[stats.Comparison]]:
    """Per group: the fastest cell against each other one."""
    return [stats.rank({s.label: s.run_values for s in group if s.ok}) for group in groups(summaries)]
