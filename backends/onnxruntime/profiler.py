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

With one session call per step, step N is the N-th call; a step may also make several calls (a decoding loop),
and a loop may attach several sessions (an encoder and a decoder step): each gets its own profiling twin, and their
traces are merged on one clock (``get_profiling_start_time_ns``). ORT's JSON is read back: each ``model_run`` is
assigned to the step that made it, the events of recorded steps are kept, a ``ProfilerStep#N`` event is added around
each step, and the result is written as a Chrome trace to ``profile_path`` (ORT's own timestamped file is removed). The op table has one row per node type
(``args.op_name``: ``FusedConv``, ``MatMul``), kernel time; the category table sorts the same node times by category
(the rest of each step's runs is ``between ops``). ``state=GPU`` needs a session on cuda; ``tracer_option`` and
``api=legacy`` have no ORT equivalent: refused (strict options) or warned about.
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
from speechperf.profiler.categories import build as build_categories


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
        if self.options.api == "legacy" and self.chose("api"):
            self.refuse_or_warn(
                "api=legacy is a paddle option; onnxruntime has one profiler, its session profiling",
                "session profiling is used",
            )
        if self.options.tracer_option != "Default" and self.chose("tracer_option"):
            self.refuse_or_warn(
                f"tracer_option={self.options.tracer_option} has no onnxruntime equivalent (ORT records every node "
                "with its shapes already)",
                "the default detail is recorded",
            )
        self._proxies: list[ProfiledSession] = []
        self._bounds: dict[int, tuple[int, ...]] = {}  # step -> each proxy's call count as the step began
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
        proxy = ProfiledSession(session)
        self._proxies.append(proxy)
        if self._trace is not None:
            # Attached after profiling began: batch_range starting at 0 or 1 opens the profiler as the loop is
            # entered, before the loop attaches its sessions. This one made no call before any step.
            self._bounds = {step: calls + (0,) for step, calls in self._bounds.items()}
            self._profile(self._trace, len(self._proxies) - 1, proxy)
        return proxy

    def _open(self, step: int) -> None:
        self._trace = trace = self.trace_file("onnxruntime_trace.json")
        trace.unlink(missing_ok=True)
        for i, proxy in enumerate(self._proxies):
            self._profile(trace, i, proxy)
        self._bounds = {step: tuple(proxy.calls for proxy in self._proxies)}  # none yet when the range starts at 0, 1

    def _profile(self, trace: Path, i: int, proxy: ProfiledSession) -> None:
        """Send ``proxy``'s calls to a twin of its session with ORT profiling on, its profile next to ``trace``."""
        spec, threads, providers = proxy.original.loaded_with
        prefix = trace.with_name(f"{trace.name}.ort{i}")
        options = {**spec.options, "enable_profiling": True, "profile_file_prefix": str(prefix)}
        proxy.current = load_onnx(attrs.evolve(spec, options=options), proxy.device, threads, providers)

    def _calls(self) -> tuple[int, ...]:
        if not self._proxies:
            raise ProfilerError(
                f"step {self.step_num}: no session to profile; onnxruntime profiles a session: call "
                "`session = prof.attach(session)` and run that session in the loop"
            )
        return tuple(proxy.calls for proxy in self._proxies)

    def _advance(self, step: int, num_samples: int | None) -> None:
        self._bounds[step] = self._calls()

    def _close(self) -> Recorded:
        trace = self._trace
        assert trace is not None  # set by _open, which runs before _close
        self._bounds[self.step_num] = self._calls()
        first = min(self._bounds)
        events, starts = [], []
        for proxy in self._proxies:
            profiled, proxy.current = proxy.current, proxy.original
            starts.append(profiled.session.get_profiling_start_time_ns())
            raw = Path(profiled.session.end_profiling())
            with open(raw) as f:
                events.append(json.load(f))
            raw.unlink()
        kept: list[dict] = []
        marks: dict[int, list[dict]] = {}
        for i, session_events in enumerate(events):
            shift = (starts[i] - min(starts)) // 1000  # ORT's ts are microseconds from the session's own start
            for e in session_events:
                if "ts" in e:
                    e["ts"] += shift
            bounds = {step: calls[i] - self._bounds[first][i] for step, calls in self._bounds.items()}
            mine, session_marks = self._recorded_events(session_events, bounds)
            kept.extend(mine)
            for mark in session_marks:
                marks.setdefault(mark["args"]["step"], []).append(mark)
        step_marks = [_merged_mark(step, marks[step]) for step in sorted(marks)]
        steps = tuple(sorted(marks))
        kept = step_marks + kept
        trace.write_text(json.dumps({"traceEvents": kept, "displayTimeUnit": "ms"}))
        ops = aggregate(
            (e["args"].get("op_name", e["name"]), round(e["dur"] * 1000)) for e in kept if e.get("cat") == "Node"
        )
        return Recorded(ops=ops, steps=steps, trace_path=trace, categories=_categories(kept, self.backend))

    def _recorded_events(self, events: list[dict], bounds: dict[int, int]) -> tuple[list[dict], list[dict]]:
        """One session's events of the recorded steps' runs, and a step mark per step that made runs.

        ``bounds``: step -> this session's profiled calls made before the step began.
        """
        runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
        marks = sorted(bounds.items())
        kept_runs, step_marks = [], []
        for (step, begin), (_, end) in zip(marks, marks[1:]):
            if not self.options.batch_range[0] <= step < self.options.batch_range[1]:
                continue
            mine = runs[begin:end]
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
                    "args": {"runs": len(mine), "step": step},
                }
            )
        starts = [r["ts"] for r in kept_runs]  # runs do not overlap: they are sorted and disjoint

        def in_a_run(e) -> bool:
            i = bisect.bisect_right(starts, e.get("ts", -1)) - 1
            return i >= 0 and e["ts"] <= kept_runs[i]["ts"] + kept_runs[i]["dur"]

        kept = [e for e in events if e.get("ph") == "X" and in_a_run(e)]
        return kept, step_marks


def _categories(kept: list[dict], backend: str):
    """Node kernel time of each step, by category; the step is its ``ProfilerStep#N`` mark (all of its runs)."""
    marks = [e for e in kept if e.get("cat") == "Step"]
    step_ns = {int(e["name"].split("#")[1]): round(e["dur"] * 1000) for e in marks}
    bounds = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])) for e in marks)
    spans = []
    for e in kept:
        if e.get("cat") != "Node":
            continue
        step = next((s for begin, end, s in bounds if begin <= e["ts"] <= end), None)
        if step is not None:
            spans.append((step, e["args"].get("op_name", e["name"]), round(e["dur"] * 1000), None))
    source = "onnxruntime: node kernel time of each step's runs"
    return build_categories(backend, spans, step_ns, source)


def _merged_mark(step: int, marks: list[dict]) -> dict:
    """One ProfilerStep#N event around every session's runs of step N."""
    begin = min(m["ts"] for m in marks)
    end = max(m["ts"] + m["dur"] for m in marks)
    runs = sum(m["args"]["runs"] for m in marks)
    return {**marks[0], "ts": begin, "dur": end - begin, "args": {"runs": runs}}


def make_step_profiler(backend, options, **kwargs) -> OnnxRuntimeStepProfiler:
    backend.require_available()
    return OnnxRuntimeStepProfiler(options, **kwargs)
