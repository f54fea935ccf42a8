"""Calibration feeds: the real inputs each graph of a stage receives while the fp32 stage runs the dataset.

The fp32 stages are built on the backend and run over the first calibration samples of the benchmark's dataset, as the
benchmark would run them (features, decoding loop, hand-off to the next stage), with every session wrapped so that
each call's feeds are kept. A decoder step is called once per token, so it collects many more feeds than the
encoder; at most ``limit`` per graph are kept, spread evenly over the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from speechperf.backend import Session


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


def record_feeds(stages, samples, limit: int) -> list[dict[str, list[dict[str, np.ndarray]]]]:
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
