"""The paddle step profilers: ``api=new`` drives ``paddle.profiler.Profiler``, ``api=legacy`` the old
``start_profiler(state, tracer_option)`` / ``stop_profiler(sorted_key, profile_path)`` calls.

``api=new``: ``Profiler(scheduler=(start, end), timer_only=..., on_trace_ready=...)`` stepped with
``step(num_samples)``; its trace is exported as Chrome trace JSON to ``profile_path`` (what
``paddle.profiler.export_chrome_tracing`` does, but to the exact path rather than a timestamped name in a folder).
The op table is paddle's own operator summary (the data ``Profiler.summary()`` prints): one row per operator
(``conv2d dygraph``, ``Global_Conv2dGradNodeFinal``, ``adam_ dygraph``), host time. ``state``: CPU/GPU/All ->
``ProfilerTarget`` CPU/GPU/both where a GPU exists; ``tracer_option``: OpDetail records shapes, AllOpDetail also
memory. Only one ``paddle.profiler.Profiler`` can be live in a process. ``timer_only`` starts no paddle profiler
(paddle's own ``timer_only`` mode would add its timer to each step): the shared clock times the same steps as on
every other backend.

``api=legacy``: ``paddle.utils.profiler`` where it exists (Paddle 2.x); Paddle 3.x removed that module, and the
same C++ calls remain as ``paddle.base.core.enable_profiler(state)`` / ``disable_profiler(sorted_key, path)``.
``disable_profiler`` prints paddle's own report to stdout and writes a protobuf ``paddle.platform.proto.Profile``
to ``profile_path``; it is read back here (no protobuf package needed: the message is five fields deep), turned into
the op table (events directly inside a step, inclusive host time) and into a Chrome trace at ``profile_path.json``.
Each step is wrapped in a ``ProfileStep#N`` user event so the profile shows which steps it holds; legacy has no
warm-up step, as in PaddleSpeech.

Both: ``state=GPU`` without a GPU is refused (strict options) or warned about and CPU is used (the drop-ins).
reader_cost times ``paddle.io.DataLoader``'s ``next()`` (both of its iterators) while the profiler is entered. The
category table takes the outermost events of each step: paddle's ``Backward`` and ``Optimization`` events whole
(backward total, optimizer), a leaf layer's ``Forward`` event whole when the layer's name says what it is
(``Conv1D``, ``LSTM``, ``Linear``; a model's own ``Forward`` is looked into), the Python API call of an op
(``relu pybind_imperative_func``) or the kernel (``conv2d dygraph``); legacy: the events directly inside each step.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from speechperf.backends.paddle.framework import import_paddle
from speechperf.profiler import OpStat, ProfilerError, ProfilerOptions, Recorded, StepProfiler, aggregate
from speechperf.profiler.categories import PARTIAL_MARK, category_of
from speechperf.profiler.categories import build as build_categories

if TYPE_CHECKING:
    from paddle.profiler import Profiler

paddle = import_paddle()
core = paddle.base.core

_STEP = re.compile(r"ProfileStep#(\d+)")

#: The speechperf paddle profiler now recording: paddle allows one profiler per process.
_live: list[StepProfiler] = []


def _claim(prof: StepProfiler) -> None:
    if _live or core.is_profiler_enabled():
        raise ProfilerError(
            "a paddle profiler is already running in this process; paddle allows one at a time "
            "(end the other one first, or profile in another process)"
        )
    _live.append(prof)


def _release(prof: StepProfiler) -> None:
    if prof in _live:
        _live.remove(prof)


def _has_gpu() -> bool:
    return paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0


def _state_for(prof: StepProfiler) -> str:
    """The state to profile: ``state=GPU`` without a GPU is refused, or warned about and CPU is used."""
    state = prof.options.state
    if state == "GPU" and not _has_gpu() and not prof.options.timer_only:  # timer_only starts no profiler
        message = (
            f"state='GPU' needs a GPU, but paddlepaddle {paddle.__version__} has none (compiled with CUDA: "
            f"{paddle.device.is_compiled_with_cuda()}); use state=CPU or state=All"
        )
        if prof.options.strict:
            raise ProfilerError(message)
        prof.warn(f"{message}; state=CPU is used")
        return "CPU"
    return state


def _check_tracer_option(prof: StepProfiler) -> None:
    """paddlepaddle 3.x on CPU records the same events at every ``tracer_option`` (in both APIs, and the new API's
    ``record_shapes`` leaves the trace's ``input_shapes`` empty in eager mode): say so rather than ignore it."""
    detail = prof.options.tracer_option
    if detail != "Default" and not _has_gpu() and prof.chose("tracer_option"):
        prof.refuse_or_warn(
            f"tracer_option={detail} changes nothing paddlepaddle {paddle.__version__} records on CPU (the same "
            "events as Default, no input shapes)",
            "the default detail is recorded",
        )


class _ReaderHook(StepProfiler):
    """A step profiler whose reader_cost is the time in ``paddle.io.DataLoader``'s ``next()`` (its single- and
    multi-process iterators)."""

    def _hook_reader(self) -> bool:
        from paddle.io.dataloader import dataloader_iter

        self._originals = {}
        add = self.add_reader_time
        for cls in (dataloader_iter._DataLoaderIterSingleProcess, dataloader_iter._DataLoaderIterMultiProcess):
            original = cls.__dict__["__next__"]

            def timed_next(it, _original=original):
                t = time.perf_counter_ns()
                try:
                    return _original(it)
                finally:
                    add(time.perf_counter_ns() - t)

            self._originals[cls] = original
            cls.__next__ = timed_next  # type: ignore[method-assign]  # patching paddle's iterator class is the point
        return True

    def _unhook_reader(self) -> None:
        for cls, original in self._originals.items():
            cls.__next__ = original  # type: ignore[method-assign]  # undoes the patch above


class PaddleStepProfiler(_ReaderHook):
    """``api=new``: ``paddle.profiler.Profiler``."""

    backend = "paddle"
    source = "paddle.profiler operator summary, host time"

    def __init__(self, options=None, **kwargs):
        super().__init__(options, **kwargs)
        self._state = _state_for(self)
        _check_tracer_option(self)
        self._prof: Profiler | None = None
        self._trace: Path | None = None
        #: Also print paddle's own ``Profiler.summary(**native_summary)`` when the range ends (the t2s drop-in:
        #: ``op_detail=True, thread_sep=False, time_unit='ms'``, as PaddleSpeech's t2s profiler does).
        self.native_summary: dict | None = None

    def _targets(self):
        from paddle.profiler import ProfilerTarget

        state = self._state
        if state == "CPU":
            return [ProfilerTarget.CPU]
        if state == "GPU":
            return [ProfilerTarget.GPU]
        return [ProfilerTarget.CPU, ProfilerTarget.GPU] if _has_gpu() else [ProfilerTarget.CPU]

    def _open(self, step: int) -> None:
        from paddle import profiler

        _claim(self)
        try:
            self._start_profiler(profiler, step)
        except BaseException:
            _release(self)
            raise

    def _start_profiler(self, profiler, step: int) -> None:
        detail = self.options.tracer_option
        self._trace = trace = self.trace_file("paddle_trace.json")
        trace.unlink(missing_ok=True)
        self._prof = profiler.Profiler(
            targets=self._targets(),
            scheduler=tuple(self.options.batch_range),
            on_trace_ready=lambda p: p.export(str(trace), "json"),
            record_shapes=detail != "Default",
            profile_memory=detail == "AllOpDetail",
        )
        # The shared counter skipped the earlier steps without calling paddle; tell paddle which step this is, so
        # its scheduler (READY one step before the range) and its ProfileStep#N labels use the loop's numbers.
        self._prof.step_num = step
        self._prof.current_state = self._prof.scheduler(step)
        self._prof.start()
        # paddle's timer began with start() and would print its own "Perf Summary" at stop(), over other steps
        # than the shared clock's: one summary per run, so its event is taken off the stack stop() prints from
        from paddle.profiler.timer import benchmark

        if not benchmark().events.is_empty():
            benchmark().events.pop()

    def _advance(self, step: int, num_samples: int | None) -> None:
        assert self._prof is not None  # set by _open, which runs before _advance
        self._prof.step(num_samples=num_samples)

    def _close(self) -> Recorded:
        from paddle.profiler.profiler_statistic import StatisticData

        prof, self._prof = self._prof, None
        assert prof is not None  # set by _open, which runs before _close
        try:
            prof.stop()  # in a recording state this exports the trace through on_trace_ready
        finally:
            _release(self)
        if prof.profiler_result is None:  # stopped before the first recorded step
            return Recorded()
        if self.native_summary is not None and self.echo:
            prof.summary(**self.native_summary)
        tree = prof.profiler_result.get_data()
        data = StatisticData(tree, prof.profiler_result.get_extra_info())
        ops = [
            OpStat(name, int(item.call), int(item.cpu_time), int(item.max_cpu_time), int(item.min_cpu_time))
            for name, item in data.event_summary.items.items()
        ]
        trace = self._trace
        assert trace is not None  # set by _open, which runs before _close
        return Recorded(
            ops=ops,
            steps=_trace_steps(trace),
            trace_path=trace,
            categories=_categories(tree, self.options.batch_range[0], self.step_num),
        )


#: The categories of an attention layer's own ops (not its ``Linear`` layers) that torch's fused
#: ``scaled_dot_product_attention`` holds: the two matmuls, the scale, softmax and dropout.
_ATTENTION_CORE = ("matmul/linear", "elementwise")


def _whole_layer(node) -> bool:
    """A layer's ``Forward`` event counted whole: a leaf layer whose name says what it is (``Conv1D``, ``LSTM``).
    paddle's ``MultiHeadAttention`` is not a leaf: its q/k/v/out ``Linear`` layers count as matmul/linear and its
    own matmul + softmax ops as attention, as torch splits ``nn.MultiheadAttention`` (linear ops around a fused
    attention op)."""
    from paddle.profiler import TracerEventType as T

    leaf = not any(c.type == T.Forward for c in node.children_node)
    return leaf and category_of(node.name) != "other"


def _categories(tree, start: int, ended: int):
    """The outermost events of each recorded ``ProfileStep#N`` (``tree``: thread id -> root event node)."""
    from paddle.profiler import TracerEventType as T

    whole = {T.Backward: "backward total", T.Optimization: "optimizer", T.Dataloader: "data movement"}
    spans, step_ns = [], {}
    for root in tree.values():
        for node in root.children_node:
            m = _STEP.match(node.name)
            if node.type != T.ProfileStep or not m or not start <= int(m.group(1)) < ended:
                continue
            step = int(m.group(1))
            step_ns[step] = node.end_ns - node.start_ns
            stack = [(child, False) for child in node.children_node]
            while stack:
                child, in_attention = stack.pop()
                category = whole.get(child.type)
                if category is None and child.type == T.Forward:
                    if not _whole_layer(child):
                        # a model or block: look at its layers and ops; an attention layer's own ops are attention
                        inside = in_attention or category_of(child.name) == "attention"
                        stack.extend((c, inside) for c in child.children_node)
                        continue
                elif category is None and child.type == T.UserDefined and not _is_api_call(child.name):
                    stack.extend((c, in_attention) for c in child.children_node)  # the user's own record_event
                    continue
                elif category is None and in_attention and category_of(child.name) in _ATTENTION_CORE:
                    category = "attention"  # q @ k, softmax, dropout, @ v: what torch's fused op holds
                spans.append((step, child.name, child.end_ns - child.start_ns, category))
    source = (
        "paddle.profiler: outermost events of each ProfileStep (Backward and Optimization whole, leaf layers, "
        "op calls), host time"
    )
    return build_categories("paddle", spans, step_ns, source)


def _is_api_call(name: str) -> bool:
    return name.endswith((" pybind_imperative_func", " pybind_patch_func"))


def _trace_steps(path: Path) -> tuple[int, ...]:
    with open(path) as f:
        trace = json.load(f)
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    found = (_STEP.match(str(e.get("name", ""))) for e in events)
    return tuple(sorted({int(m.group(1)) for m in found if m}))


# -- api=legacy --------------------------------------------------------------------------------------------------

_LEGACY_STATE = {"CPU": "kCPU", "GPU": "kCUDA", "All": "kAll"}
_LEGACY_TRACER = {"Default": "kDefault", "OpDetail": "kOpDetail", "AllOpDetail": "kAllOpDetail"}
_LEGACY_SORT = {"calls": "kCalls", "total": "kTotal", "max": "kMax", "min": "kMin", "ave": "kAve"}


def legacy_module():
    """``paddle.utils.profiler`` on Paddle 2.x; None on Paddle 3.x, which removed it."""
    try:  # by name: paddle's own type information is 3.x's, which has no such module
        legacy = importlib.import_module("paddle.utils.profiler")
    except ImportError:
        return None
    return legacy if hasattr(legacy, "start_profiler") else None


def start_profiler(state: str, tracer_option: str) -> None:
    legacy = legacy_module()
    if legacy is not None:
        legacy.start_profiler(state, tracer_option)
        return
    if core.is_profiler_enabled():
        return
    core.set_tracer_option(getattr(core.TracerOption, _LEGACY_TRACER[tracer_option]))
    core.enable_profiler(getattr(core.ProfilerState, _LEGACY_STATE[state]))


def stop_profiler(sorted_key: str, profile_path: str) -> None:
    legacy = legacy_module()
    if legacy is not None:
        legacy.stop_profiler(sorted_key, profile_path)
        return
    if not core.is_profiler_enabled():
        return
    core.disable_profiler(getattr(core.EventSortingKey, _LEGACY_SORT[sorted_key]), profile_path)


class LegacyPaddleStepProfiler(_ReaderHook):
    """``api=legacy``: PaddleSpeech's ``start_profiler`` / ``stop_profiler``."""

    backend = "paddle"
    warmup_steps = 0
    source = "paddle legacy profile: events directly inside each step, inclusive host time"

    def __init__(self, options=None, **kwargs):
        super().__init__(options, **kwargs)
        self._state = _state_for(self)
        _check_tracer_option(self)
        self._marker = None
        self._raw: Path | None = None

    def _mark(self, step: int) -> None:
        if self._marker is not None:
            self._marker.end()
        self._marker = core._RecordEvent(f"ProfileStep#{step}", core.TracerEventType.UserDefined)

    def _open(self, step: int) -> None:
        _claim(self)
        try:
            self._raw = self.trace_file("paddle_legacy.profile")
            self._raw.unlink(missing_ok=True)
            start_profiler(self._state, self.options.tracer_option)
        except BaseException:
            _release(self)
            raise
        self._mark(step)

    def _advance(self, step: int, num_samples: int | None) -> None:
        self._mark(step)

    def _close(self) -> Recorded:
        raw = self._raw
        assert raw is not None  # set by _open, which runs before _close
        if self._marker is not None:
            self._marker.end()
            self._marker = None
        try:
            stop_profiler(self.options.sorted_key, str(raw))
        finally:
            _release(self)
        events = read_legacy_profile(raw)
        steps, rows, spans, step_ns = set(), [], [], {}
        for name, start, end in events:
            parts = name.split("/")
            m = _STEP.fullmatch(parts[0])
            if not m:
                continue
            step = int(m.group(1))
            steps.add(step)
            if len(parts) == 1 and step < self.step_num:
                step_ns[step] = end - start
            elif len(parts) == 2:
                rows.append((parts[1], end - start))
                spans.append((step, parts[1], end - start, None))
        chrome = raw.with_name(raw.name + ".json")
        write_chrome_trace(events, chrome)
        source = f"paddle legacy API: {PARTIAL_MARK} (all of backward is one event), host time"
        return Recorded(
            ops=aggregate(rows),
            steps=tuple(sorted(steps)),
            trace_path=chrome,
            raw_path=raw,
            categories=build_categories("paddle", spans, step_ns, source),
        )


# -- reading the legacy profile -----------------------------------------------------------------------------------


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(buf: bytes):
    """(field number, value) of a protobuf message: ints for varints, bytes for length-delimited fields."""
    i = 0
    value: int | bytes
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, value


def read_legacy_profile(path: Path) -> list[tuple[str, int, int]]:
    """``(name, start_ns, end_ns)`` of every event in a legacy ``paddle.platform.proto.Profile`` file.

    Profile: ``events = 1`` (repeated Event). Event: ``name = 1``, ``start_ns = 2``, ``end_ns = 3``. Nested events
    are named by their path, ``outer/inner``.
    """
    data = Path(path).read_bytes()
    events = []
    for number, value in _fields(data):
        if number != 1:
            continue
        event = dict(_fields(value))
        events.append((event.get(1, b"").decode("utf-8", "replace"), int(event.get(2, 0)), int(event.get(3, 0))))
    return events


def write_chrome_trace(events: list[tuple[str, int, int]], path: Path) -> None:
    """A Chrome trace of legacy events, named by their last path part, so Perfetto can show the timeline."""
    origin = min((s for _, s, _ in events), default=0)
    trace = [
        {
            "name": name.rsplit("/", 1)[-1],
            "cat": "paddle_legacy",
            "ph": "X",
            "ts": (start - origin) / 1000,
            "dur": (end - start) / 1000,
            "pid": 0,
            "tid": 0,
            "args": {"path": name},
        }
        for name, start, end in events
    ]
    path.write_text(json.dumps({"traceEvents": trace, "displayTimeUnit": "ms"}))


def make_step_profiler(backend, options, **kwargs) -> StepProfiler:
    backend.require_available()
    options = ProfilerOptions.coerce(options)
    if options.api == "legacy":
        return LegacyPaddleStepProfiler(options, **kwargs)
    return PaddleStepProfiler(options, **kwargs)
