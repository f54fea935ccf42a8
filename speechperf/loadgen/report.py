"""A LoadGen run's result and its exports: JSON (everything), CSV and Markdown (one row per run), the console table."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from speechperf import tables
from speechperf.loadgen.summary import Summary


@attrs.frozen
class StageTime:
    label: str
    calls: int
    mean_ms: float | None
    p90_ms: float | None


@attrs.frozen
class LoadgenRun:
    """One LoadGen test: what LoadGen reports, plus what the SUT measured (RTFx, per-stage service times)."""

    scenario: str
    mode: str
    backend: str
    instances: int
    threads: int
    target_qps: float | None  # Server's scheduled rate, Offline's expected one
    target_latency_ms: float | None
    percentile: float
    summary: Summary
    rtfx: float | None  # audio seconds served per wall second
    audio_seconds: float
    samples: int
    stages: tuple[StageTime, ...]
    failed: dict[int, str]
    compliance: tuple[str, ...]
    log_dir: str
    complete: bool = True


def stage_times(labels, seconds_per_stage) -> tuple[StageTime, ...]:
    out = []
    for label, seconds in zip(labels, seconds_per_stage):
        ms = [s * 1000 for s in seconds]
        mean = sum(ms) / len(ms) if ms else None
        out.append(StageTime(label, len(ms), mean, float(np.percentile(ms, 90)) if ms else None))
    return tuple(out)


COLUMNS = (
    "scenario",
    "mode",
    "backend",
    "instances",
    "threads",
    "result",
    "headline",
    "target_qps",
    "scheduled_qps",
    "completed_qps",
    "samples_per_s",
    "rtfx",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p99.9_ms",
    "samples",
    "unmet",
    "compliance",
)


def row(run: LoadgenRun) -> dict[str, Any]:
    s = run.summary

    def r(v, digits=2):
        return None if v is None else round(v, digits)

    return {
        "scenario": run.scenario,
        "mode": run.mode,
        "backend": run.backend,
        "instances": run.instances,
        "threads": run.threads,
        "result": s.result,
        "headline": s.headline,
        "target_qps": r(run.target_qps),
        "scheduled_qps": r(s.scheduled_qps),
        "completed_qps": r(s.completed_qps),
        "samples_per_s": r(s.samples_per_s),
        "rtfx": r(run.rtfx),
        "p50_ms": r(s.percentiles_ms.get("p50")),
        "p90_ms": r(s.percentiles_ms.get("p90")),
        "p99_ms": r(s.percentiles_ms.get("p99")),
        "p99.9_ms": r(s.percentiles_ms.get("p99.9")),
        "samples": run.samples,
        "unmet": "; ".join(s.unmet) or None,
        "compliance": "; ".join(run.compliance) or None,
    }


def to_json(runs, extra: dict[str, Any], complete: bool = True) -> dict[str, Any]:
    return {
        "complete": complete and all(r.complete for r in runs),
        **extra,
        "runs": [attrs.asdict(r, value_serializer=_plain) for r in runs],
    }


def _plain(inst, field, value):
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return value


def to_csv(runs) -> str:
    return tables.to_csv(COLUMNS, [row(r) for r in runs])


def to_markdown(runs) -> str:
    return tables.to_markdown(COLUMNS, [[row(r)[c] for c in COLUMNS] for r in runs])


TABLE = ("backend", "scenario", "result", "headline", "samples_per_s", "rtfx", "p50_ms", "p90_ms", "p99_ms", "samples")


def print_runs(runs, file) -> None:
    rows = [[row(r)[c] for c in TABLE] for r in runs]
    tables.print_table("speechperf loadgen", TABLE, rows, file, left=("backend", "scenario", "result", "headline"))
    for run in runs:
        for reason in run.summary.unmet:
            file.write(f"{run.scenario} {run.summary.result}: {reason}\n")
        for note in run.compliance:
            file.write(f"{run.scenario}: {note}\n")
        for stage in run.stages if len(run.stages) > 1 else ():
            file.write(
                f"{run.scenario}: stage {stage.label}: mean {stage.mean_ms:.2f} ms, p90 {stage.p90_ms:.2f} ms "
                f"over {stage.calls} call(s) (service time, no queueing)\n"
                if stage.mean_ms is not None
                else ""
            )
