"""Calibration feeds: the real inputs each graph of a stage receives while the fp32 stage runs the dataset.

The fp32 stages are built on the backend and run over the first calibration samples of the benchmark's dataset, as the
benchmark would run them (features, decoding loop, hand-off to the next stage), with every session wrapped so that
each call's feeds are kept. A decoder step is called once per token, so it collects many more feeds than the
encoder; at most ``limit`` per graph are kept, spread evenly over the run.

``write_feeds``/``read_feeds`` keep recorded feeds in a folder (``feeds.npz`` and its ``index.json``), so that
the processes ``speechperf tune`` makes its int8 files in share one backend's recording: plain arrays, read back
without unpickling anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from speechperf.backend import Session
from speechperf.outputs import atomic_folder

#: Per stage, per session name: the feeds of its calls, as ``record_feeds`` returns them.
Recorded = list[dict[str, list[dict[str, np.ndarray]]]]


class RecordingSession(Session):
    """A session that keeps a copy of the feeds of every call and passes the call through."""

    def __init__(self, inner: Session):
        self.inner = inner
        self.backend = inner.backend
        self.device = inner.device
        self.inputs = inner.inputs
        self.outputs = inner.outputs
        self.calls: list[dict[str, np.ndarray]] = []

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls.append({k: np.array(v, copy=True) for k, v in feeds.items()})
        return self.inner.run(feeds)


def spread(items: Sequence, limit: int) -> list:
    """At most ``limit`` items, evenly spaced over ``items`` (first and last included)."""
    if len(items) <= limit:
        return list(items)
    picks = np.linspace(0, len(items) - 1, limit).round().astype(int)
    return [items[i] for i in dict.fromkeys(picks.tolist())]


def record_feeds(stages, samples, limit: int) -> Recorded:
    """Per stage, per session name: the feeds it was called with on ``samples`` (at most ``limit`` kept)."""
    recorders = []
    for stage in stages:
        wrapped = {name: RecordingSession(s) for name, s in stage.sessions.items()}
        stage.sessions = wrapped
        recorders.append(wrapped)
    inputs = [stages[0].from_sample(sample) for sample in samples]
    for index, stage in enumerate(stages):
        outputs = [stage.forward(inp) for inp in inputs]
        if index + 1 < len(stages):
            inputs = [stages[index + 1].from_previous(out) for out in outputs]
    for stage, wrapped in zip(stages, recorders):
        stage.sessions = {name: r.inner for name, r in wrapped.items()}
    return [{name: spread(r.calls, limit) for name, r in wrapped.items()} for wrapped in recorders]


def write_feeds(folder: Path, **recorded: Recorded) -> None:
    """Each named recording into ``folder`` (replaced whole, atomically): the arrays in ``feeds.npz``, where each
    one sits in ``index.json``."""
    arrays: dict[str, np.ndarray] = {}

    def named(feeds: dict[str, np.ndarray]) -> dict[str, str]:
        out = {}
        for input_name, value in feeds.items():
            out[input_name] = key = f"a{len(arrays)}"
            arrays[key] = value
        return out

    index = {
        what: [{session: [named(call) for call in calls] for session, calls in stage.items()} for stage in stages]
        for what, stages in recorded.items()
    }
    with atomic_folder(folder, "calibration feeds") as work:
        np.savez(work / "feeds.npz", allow_pickle=False, **arrays)  # numbers only
        (work / "index.json").write_text(json.dumps(index), encoding="utf-8")


def read_feeds(folder: Path) -> dict[str, Recorded] | None:
    """What ``write_feeds`` kept in ``folder``, by name, or None when it holds none."""
    if not (folder / "index.json").is_file():
        return None
    index: dict[str, Any] = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    with np.load(folder / "feeds.npz", allow_pickle=False) as npz:
        return {
            what: [
                {
                    session: [{k: npz[key] for k, key in call.items()} for call in calls]
                    for session, calls in stage.items()
                }
                for stage in stages
            ]
            for what, stages in index.items()
        }
