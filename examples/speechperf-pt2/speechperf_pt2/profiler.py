"""The step profiler (docs/backends.md, "Step profiler"): every node of the program timed while the range is open.

A runtime without a profiler of its own can still split a step into ops: ``attach`` hands the loop a session that,
while the range is open, runs the program through a ``torch.fx.Interpreter`` timing each aten op. The steps are
timed by ``StepProfiler`` itself (``step_spans()``), so the category table's ``between ops`` row is the step's time
outside every op on the clock that times every backend.
"""

from __future__ import annotations

import json
import time

from speechperf.backend import Session
from speechperf.profiler import Recorded, StepProfiler, aggregate
from speechperf.profiler.categories import build

SOURCE = "pt2 graph nodes (aten ops through torch.fx.Interpreter), host time"


class _Timed:
    """``torch.fx.Interpreter`` over the program's module, recording (op, start ns, ns) of each aten op."""

    def __init__(self, module, record):
        import torch.fx

        class Interpreter(torch.fx.Interpreter):
            def call_function(self, target, args, kwargs):
                start = time.perf_counter_ns()
                out = super().call_function(target, args, kwargs)
                record(str(target).split(".")[1] if str(target).startswith("aten.") else str(target), start)
                return out

        self._interpreter = Interpreter(module)

    def __call__(self, *args):
        return self._interpreter.run(*args)


class ProfiledSession(Session):
    """The session the loop calls: the same ports, spec and checks; op by op while the profiler records."""

    def __init__(self, session, profiler: Pt2StepProfiler):
        self._session, self._profiler = session, profiler
        self.backend, self.device = session.backend, session.device
        self.inputs, self.outputs, self.spec = session.inputs, session.outputs, session.spec
        self._timed = _Timed(session.module, profiler.record)

    def run(self, feeds):
        if self._profiler.recording:
            return self._session.outputs_of(self._timed, feeds)
        return self._session.run(feeds)


class Pt2StepProfiler(StepProfiler):
    backend = "pt2"
    warmup_steps = 0  # nothing to warm up: the interpreter starts with the range
    source = SOURCE

    def __init__(self, options=None, **kwargs):
        super().__init__(options, **kwargs)
        self.recording = False
        self._step = 0
        self._spans: list[tuple[int, str, int, int]] = []  # (step, op, start ns, ns)

    def attach(self, session):
        return ProfiledSession(session, self)

    def record(self, op: str, start: int) -> None:
        self._spans.append((self._step, op, start, time.perf_counter_ns() - start))

    def _open(self, step: int) -> None:  # may run before any attach (batch_range=[0,...]): only a flag
        self.recording, self._step = True, step

    def _advance(self, step: int, num_samples: int | None) -> None:
        self._step = step

    def _close(self) -> Recorded:
        self.recording = False
        steps = self.step_spans()  # every recorded step's wall time, on the shared clock
        trace = self.trace_file("pt2_trace.json")
        events = [
            {"name": op, "ph": "X", "ts": start / 1000, "dur": ns / 1000, "pid": 0, "tid": 0, "args": {"step": step}}
            for step, op, start, ns in self._spans
        ]
        trace.write_text(json.dumps({"traceEvents": events}))
        spans = [(step, op, ns, None) for step, op, _, ns in self._spans if step in steps]
        return Recorded(
            ops=aggregate([(op, ns) for _, op, ns, _ in spans]),
            steps=tuple(sorted(steps)),
            trace_path=trace,
            categories=build("pt2", spans, steps, SOURCE),
        )


def make_step_profiler(backend, options, **kwargs) -> StepProfiler:
    backend.require_available()
    return Pt2StepProfiler(options, **kwargs)
