"""A LoadGen test's result, the document's ``runs`` and rows made from it (``speechperf.results.loadgen_table``),
and the console table with the notes under it."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from speechperf import tables
from speechperf.loadgen.summary import Summary
from speechperf.results import figures, loadgen_table


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
    user_conf: str | None = None  # --user-conf, applied over the options (TestSettings.FromConfig)
    audit_conf: str | None = None  # --audit-conf, when LoadGen's detail log says it applied it


def stage_times(labels, seconds_per_stage) -> tuple[StageTime, ...]:
    out = []
    for label, seconds in zip(labels, seconds_per_stage):
        ms = [s * 1000 for s in seconds]
        mean = sum(ms) / len(ms) if ms else None
        out.append(StageTime(label, len(ms), mean, float(np.percentile(ms, 90)) if ms else None))
    return tuple(out)


def runs_json(runs) -> list[dict[str, Any]]:
    """The document's ``runs``: every test as a plain dict (the form ``speechperf.results.loadgen_table`` reads)."""
    return [attrs.asdict(r, value_serializer=_plain) for r in runs]


def _plain(inst, field, value):
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return value


def rows(runs, peak: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return loadgen_table.rows(runs_json(runs), peak)


#: The console's columns (the exports have every column of ``loadgen_table.COLUMNS``).
TABLE = (
    "backend",
    "scenario",
    "result",
    "headline",
    "samples_per_s",
    "audio_s_per_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "samples",
)


def run_notes(runs, chosen: int | None = None) -> list[str]:
    """What the console prints under the table: each unmet condition (a peak search's with its trial number), the
    compliance notes once: those of the ``chosen`` test (a peak search's best trial) or else the last one, and the
    per-stage times of that test."""
    lines = []
    for n, run in enumerate(runs, 1):
        trial = f"trial {n}: " if len(runs) > 1 else ""
        lines += [f"{trial}{run.scenario} {run.summary.result}: {reason}" for reason in run.summary.unmet]
    for run in runs[chosen : chosen + 1] if chosen is not None else runs[-1:]:
        lines += [f"{run.scenario}: {note}" for note in run.compliance]
        lines += [f"{run.scenario}: {name} {path} applied" for name, path in _conf_files(run) if path]
        for stage in run.stages if len(run.stages) > 1 else ():
            if stage.mean_ms is not None:
                lines.append(
                    f"{run.scenario}: stage {stage.label}: mean {stage.mean_ms:.2f} ms, p90 {stage.p90_ms:.2f} ms "
                    f"over {stage.calls} call(s) (service time, no queueing)"
                )
    return lines


def _conf_files(run) -> tuple[tuple[str, str | None], ...]:
    return (("user.conf", run.user_conf), ("audit.config", run.audit_conf))


def print_runs(table_rows: list[dict[str, Any]], notes: list[str], file) -> None:
    shown_rows = [
        [figures.shown(c, r.get(c)) for c in TABLE] for r in table_rows if r.get("mode") != loadgen_table.PEAK
    ]
    tables.print_table(
        "speechperf loadgen", TABLE, shown_rows, file, left=("backend", "scenario", "result", "headline")
    )
    for line in notes:
        file.write(line + "\n")
