"""A LoadGen test's result, and the document's ``runs`` and rows made from it (``speechperf.results.loadgen_table``);
the console table and the lines under it are the view's (``speechperf.views.loadgen``), from the document."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from speechperf.loadgen.summary import Summary
from speechperf.results import loadgen_table


@attrs.frozen
class StageTime:
    label: str
    calls: int
    mean_ms: float | None
    p90_ms: float | None
    #: ``general.serving: stages``: the mean requests one forward of the stage took (dynamic batching); else None
    mean_batch: float | None = None


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


def stage_times(labels, seconds_per_stage, mean_batches=None) -> tuple[StageTime, ...]:
    """Each stage's calls and service times; ``mean_batches()``: the staged SUT's mean batch a stage."""
    batches = mean_batches() if mean_batches is not None else [None] * len(labels)
    out = []
    for label, seconds, batch in zip(labels, seconds_per_stage, batches):
        ms = [s * 1000 for s in seconds]
        mean = sum(ms) / len(ms) if ms else None
        out.append(StageTime(label, len(ms), mean, float(np.percentile(ms, 90)) if ms else None, batch))
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
