"""The torch step profiler: ``torch.profiler`` with a schedule over ``batch_range``.

Options map to torch as follows. ``state``: CPU -> CPU activity; GPU -> CUDA activity (a GPU must be visible);
All -> CPU plus CUDA where CUDA is available. ``tracer_option``: Default -> ops only; OpDetail -> also input shapes;
AllOpDetail -> also shapes, memory and Python stacks. The Chrome trace is written with ``export_chrome_trace`` to
``profile_path``. The op table has one row per *top-level* op (one no other op encloses: ``aten::conv1d``, an
autograd node; a scope such as a TorchScript ``forward`` or ``Optimizer.step#Adam.step`` is a row and the ops in it
are rows too), with inclusive host time, from the same events ``key_averages()`` aggregates; nested ops
(``aten::addmm`` inside ``aten::linear``) are in the trace.

The category table takes the outermost ops of each ``ProfilerStep#N``: an op (``aten::lstm``), an autograd node
(backward total), ``Optimizer.step#...`` / ``Optimizer.zero_grad#...`` (optimizer, whole), the DataLoader's
``enumerate(DataLoader)#...`` scope (data movement, whole); other scopes are looked into. ``api=legacy`` is a paddle
option: torch has one profiler API, so it is refused (strict) or warned about and ``torch.profiler`` is used.
reader_cost times ``torch.utils.data.DataLoader``'s ``next()`` (every DataLoader iterator, while the profiler is
entered).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from speechperf.profiler import ProfilerError, Recorded, StepProfiler, aggregate
from speechperf.profiler.categories import build as build_categories

_STEP = re.compile(r"ProfilerStep#(\d+)$")


class TorchStepProfiler(StepProfiler):
    backend = "torch"
    source = "torch.profiler events: top-level ops (also those inside a scope like forward), inclusive host time"

    def __init__(self, options=None, **kwargs):
        super().__init__(options, **kwargs)
        if self.options.api == "legacy" and self.chose("api"):
            self.refuse_or_warn(
                "api=legacy is a paddle option; torch has one profiler API, torch.profiler",
                "torch.profiler is used",
            )
        self._activities = self._activities_for(self.options.state)
        self._prof: profile | None = None
        self._trace: Path | None = None
        #: DataLoader iterators' own ``__next__``, while ``_hook_reader``'s timed one replaces it
        self._next: Callable[..., Any] | None = None

    def _activities_for(self, state: str) -> list[ProfilerActivity]:
        cuda = torch.cuda.is_available()
        if state == "GPU" and not self.options.timer_only:  # timer_only starts no profiler: nothing to warn of
            if not cuda:
                message = (
                    f"state='GPU' needs a CUDA device, but torch {torch.__version__} sees none "
                    "(torch.cuda.is_available() is False); use state=CPU or state=All"
                )
                if self.options.strict:
                    raise ProfilerError(message)
                self.warn(f"{message}; state=CPU is used")
                return [ProfilerActivity.CPU]
            return [ProfilerActivity.CUDA]
        if state == "CPU" or not cuda:
            return [ProfilerActivity.CPU]
        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    def _open(self, step: int) -> None:
        warmup = self.options.batch_range[0] - step  # 1, or 0 when the range starts at step 0
        detail = self.options.tracer_option
        self._trace = self.trace_file("torch_trace.json")
        self._trace.unlink(missing_ok=True)  # a trace left by an earlier run must not pass for this one
        self._prof = profile(
            activities=self._activities,
            schedule=schedule(
                skip_first=step,
                wait=0,
                warmup=warmup,
                active=self.options.batch_range[1] - self.options.batch_range[0],
                repeat=1,
            ),
            on_trace_ready=lambda p: p.export_chrome_trace(str(self._trace)),
            record_shapes=True,  # with_flops needs the shapes
            with_flops=True,  # FLOPs per op, for the ops furthest below the roof
            profile_memory=detail == "AllOpDetail",
            with_stack=detail == "AllOpDetail",
        )
        # The shared counter skipped the earlier steps without calling torch; tell torch which step this is, so
        # its schedule and its ProfilerStep#N labels use the loop's step numbers.
        self._prof.step_num = step
        # torch annotates current_action as a Literal of ProfilerAction's members, which schedule()'s result is not.
        self._prof.current_action = self._prof.schedule(step)  # type: ignore[assignment]
        self._prof.start()

    def _advance(self, step: int, num_samples: int | None) -> None:
        assert self._prof is not None  # set by _open, which runs before _advance
        self._prof.step()

    def _hook_reader(self) -> bool:
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        original = _BaseDataLoaderIter.__next__
        add = self.add_reader_time

        def timed_next(it):
            t = time.perf_counter_ns()
            try:
                return original(it)
            finally:
                add(time.perf_counter_ns() - t)

        self._next = original
        _BaseDataLoaderIter.__next__ = timed_next  # type: ignore[method-assign]  # patching it is the point
        return True

    def _unhook_reader(self) -> None:
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        assert self._next is not None  # set by _hook_reader, which runs before _unhook_reader
        _BaseDataLoaderIter.__next__ = self._next  # type: ignore[method-assign]  # undoes the patch above

    def _close(self) -> Recorded:
        prof, self._prof = self._prof, None
        assert prof is not None  # set by _open, which runs before _close
        prof.stop()  # in the last active step this saves the trace (on_trace_ready) and keeps the events
        events = prof.events() or []
        ops = aggregate(
            (e.name, round(e.time_range.elapsed_us() * 1000), _flops_within(e))
            for e in events
            if not e.name.startswith("ProfilerStep") and _top_level(e)
        )
        trace = self._trace
        assert trace is not None  # set by _open, which runs before _close
        if not trace.exists():  # stopped before the first recorded step
            return Recorded(ops=ops)
        steps = _trace_steps(trace)
        return Recorded(ops=ops, steps=steps, trace_path=trace, categories=_categories(events, steps, self.step_num))


def _flops_within(event) -> int:
    """torch counts FLOPs on the kernels' ops (aten::mm, aten::addmm, aten::convolution): a top-level op's are its
    own plus its descendants'."""
    own = int(getattr(event, "flops", 0) or 0)
    return own or sum(_flops_within(child) for child in event.cpu_children)


_WHOLE = {"Optimizer.": "optimizer", "enumerate(DataLoader)": "data movement"}


def _categories(events, steps: tuple[int, ...], ended: int):
    """The outermost ops of each recorded step (torch names the step events ``ProfilerStep*`` in ``events()``: they
    are the recorded steps in time order)."""
    step_events = sorted(
        (e for e in events if e.name.startswith("ProfilerStep") and e.cpu_parent is None),
        key=lambda e: e.time_range.start,
    )
    spans, step_ns = [], {}
    for step, event in zip(steps, step_events):
        if step >= ended:
            continue  # began but never ended (the loop stopped)
        step_ns[step] = _ns(event)
        stack = list(event.cpu_children)
        while stack:
            child = stack.pop()
            whole = next((c for prefix, c in _WHOLE.items() if child.name.startswith(prefix)), None)
            if whole is None and "::" not in child.name:
                stack.extend(child.cpu_children)  # a scope, not an op: its ops are the spans
                continue
            spans.append((step, child.name, _ns(child), whole))
    source = "torch: outermost ops, autograd nodes and optimizer scopes of each ProfilerStep, host time"
    return build_categories("torch", spans, step_ns, source)


def _ns(event) -> int:
    return round(event.time_range.elapsed_us() * 1000)


def _top_level(event) -> bool:
    """An op no other op encloses. Scopes that are not ops (``ProfilerStep#N``, a TorchScript ``forward``,
    ``Optimizer.step#SGD.step``: top-level events whose name has no ``namespace::``) do not hide the ops inside
    them; an autograd node (``ConvolutionBackward0``, inside ``autograd::engine::evaluate_function: ...``) does."""
    parent = event.cpu_parent
    return parent is None or _is_scope(parent)


def _is_scope(event) -> bool:
    while event is not None:
        if "::" in event.name:
            return False
        event = event.cpu_parent
    return True


def _trace_steps(path) -> tuple[int, ...]:
    with open(path) as f:
        trace = json.load(f)
    found = (_STEP.match(str(e.get("name", ""))) for e in trace.get("traceEvents", []))
    return tuple(sorted(int(m.group(1)) for m in found if m))


def make_step_profiler(backend, options, **kwargs) -> TorchStepProfiler:
    backend.require_available()
    return TorchStepProfiler(options, **kwargs)
