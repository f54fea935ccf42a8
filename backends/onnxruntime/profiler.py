"""The onnxruntime step profiler: ORT session profiling, summarised into the uniform table.

ORT profiles a session, not the process, and only when the session was created with ``enable_profiling``. To make
that transparent, ``prof.attach(session)`` returns a stand-in that the loop calls instead of the session. One step
before ``batch_range`` it reloads the same model with the same options, threads and providers plus profiling, and
sends the calls there (that first step warms the new session up and is left out); when the range ends it calls
``end_profiling()`` and goes back to the original session.

    with get_backend("onnxruntime").step_profiler(options) as prof:
        session = prof.attach(session)
        for feeds in batches:
            session(feeds)
            prof.step(num_samples=len(feeds["x"]))

With one session call per step, step N is the N-th call; a step may also make several calls (a decoding loop).
ORT's JSON is read back: each ``model_run`` is assigned to the step that made it, the events of recorded steps are
kept, a ``ProfilerStep#N`` event is added around each step, and the result is written as a Chrome trace to
``profile_path`` (ORT's own timestamped file is removed). The op table has one row per node type
(``args.op_name``: ``FusedConv``, ``MatMul``), kernel time. ``state=GPU`` needs a session on cuda; ``tracer_option``
has no ORT equivalent.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import Session
from speechperf.backends.onnxruntime.session import OnnxRuntimeSession, load_onnx
from speechperf.profiler import ProfilerError, Recorded, StepProfiler, aggregate


class ProfiledSession(Session):
    """Calls the original session, or its profiling twin while the profiler records; counts the calls."""

    backend = "onnxruntime"

    def __init__(self, original: OnnxRuntimeSession):
        self.original = original
        self.current = original
        self.device = original.device
        self.inputs = original.inputs
        self.outputs = original.outputs
        self.calls = 0

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls += 1
        return self.current.run(feeds)


class OnnxRuntimeStepProfiler(StepProfiler):
    backend = "onnxruntime"
    source = "onnxruntime session profiling: node kernel time by op type"

    def __init__(self, options=None, **kwargs):
        super().__init__(options, **kwargs)
        self._proxy: ProfiledSession | None = None
        self._profiled: OnnxRuntimeSession | None = None
        self._first_call = 0
        self._bounds: dict[int, int] = {}
        self._trace: Path | None = None

    def attach(self, session):
        if self.options.timer_only:
            return session
        if not isinstance(session, OnnxRuntimeSession) or not hasattr(session, "loaded_with"):
            raise ProfilerError(
                f"the onnxruntime profiler records a session loaded by get_backend('onnxruntime').load(...); "
                f"got {type(session).__name__}"
            )
        if self.options.state == "GPU" and session.device != "cuda":
            raise ProfilerError(
                f"state='GPU' needs a session on device 'cuda'; this one runs on {session.device!r}; "
                "use state=CPU or state=All"
            )
        self._proxy = ProfiledSession(session)
        return self._proxy

    def _open(self, step: int) -> None:
        if self._proxy is None:
            raise ProfilerError(
                f"step {step}: no session to profile; onnxruntime profiles a session: call "
                "`session = prof.attach(session)` and run that session in the loop"
            )
        spec, threads, providers = self._proxy.original.loaded_with
        self._trace = self.trace_file("onnxruntime_trace.json")
        self._trace.unlink(missing_ok=True)
        prefix = self._trace.with_name(self._trace.name + ".ort")
        options = {**spec.options, "enable_profiling": True, "profile_file_prefix": str(prefix)}
        self._profiled = load_onnx(attrs.evolve(spec, options=options), self._proxy.device, threads, providers)
        self._proxy.current = self._profiled
        self._first_call = self._proxy.calls
        self._bounds = {step: self._proxy.calls}

    def _advance(self, step: int, num_samples: int | None) -> None:
        self._bounds[step] = self._proxy.calls

    def _close(self) -> Recorded:
        self._bounds[self.step_num] = self._proxy.calls
        raw = Path(self._profiled.session.end_profiling())
        self._proxy.current = self._proxy.original
        self._profiled = None
        with open(raw) as f:
            events = json.load(f)
        raw.unlink()
        kept, steps = self._recorded_events(events)
        self._trace.write_text(json.dumps({"traceEvents": kept, "displayTimeUnit": "ms"}))
        ops = aggregate(
            (e["args"].get("op_name", e["name"]), round(e["dur"] * 1000)) for e in kept if e.get("cat") == "Node"
        )
        notes = ()
        if self.options.tracer_option != "Default":
            notes = (f"tracer_option={self.options.tracer_option} has no onnxruntime equivalent; it was ignored",)
        return Recorded(ops=ops, steps=steps, trace_path=self._trace, notes=notes)

    def _recorded_events(self, events: list[dict]) -> tuple[list[dict], tuple[int, ...]]:
        """The events of the recorded steps' runs, with a ProfilerStep#N event around each step."""
        runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
        marks = sorted(self._bounds.items())
        kept_runs, step_marks = [], []
        for (step, begin), (_, end) in zip(marks, marks[1:]):
            if not self._start <= step < self._end:
                continue
            mine = runs[begin - self._first_call : end - self._first_call]
            if not mine:
                continue
            kept_runs.extend(mine)
            first, last = mine[0], mine[-1]
            step_marks.append(
                {
                    "name": f"ProfilerStep#{step}",
                    "cat": "Step",
                    "ph": "X",
                    "ts": first["ts"],
                    "dur": last["ts"] + last["dur"] - first["ts"],
                    "pid": first.get("pid", 0),
                    "tid": first.get("tid", 0),
                    "args": {"runs": len(mine)},
                }
            )
        starts = [r["ts"] for r in kept_runs]  # runs do not overlap: they are sorted and disjoint

        def in_a_run(e) -> bool:
            i = bisect.bisect_right(starts, e.get("ts", -1)) - 1
            return i >= 0 and e["ts"] <= kept_runs[i]["ts"] + kept_runs[i]["dur"]

        kept = [e for e in events if e.get("ph") == "X" and in_a_run(e)]
        steps = tuple(int(m["name"].split("#")[1]) for m in step_marks)
        return step_marks + kept, steps


def make_step_profiler(backend, options, **kwargs) -> OnnxRuntimeStepProfiler:
    backend.require_available()
    return OnnxRuntimeStepProfiler(options, **kwargs)
