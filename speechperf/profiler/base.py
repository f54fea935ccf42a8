"""``StepProfiler``: one step profiler protocol for every backend.

    with get_backend("torch").step_profiler("batch_range=[10,20]") as prof:
        for batch in loader:
            train_step(batch)
            prof.step(num_samples=len(batch))

Entering the context begins step 0; each ``step()`` ends the current step and begins the next. Steps
``batch_range[0] .. batch_range[1]-1`` are recorded. This class counts the steps for every backend: outside the
range ``step()`` only increments a counter, and the framework's profiler is started just before the range (one
warm-up step earlier where the framework has one, to absorb its own start-up cost, as ``paddle.profiler``'s
scheduler does) and stopped when the range ends. The summary is printed then, not at the end of the loop, and is
kept in ``prof.summary``. ``prof.finished`` tells a loop that it may stop; only the PaddleSpeech hook
(``speechperf.adapters.paddlespeech.add_profiler_step``) exits the process on ``exit_on_finished``, as
PaddleSpeech does.

``timer_only`` starts no framework profiler on any backend: it times the steps of the range with the same clock
everywhere and reports what ``paddle.profiler``'s timer reports (reader_cost, batch_cost, ips), and writes no trace.
reader_cost is the time the loop waited in its data loader's ``next()``: the backend hooks its framework's loader
(``torch.utils.data.DataLoader``, ``paddle.io.DataLoader``) while the profiler is entered, and ``prof.timed(iterable)``
times any other iterable.

An option a backend cannot honour (``api=legacy`` on torch, ``state=GPU`` without a GPU) is refused with one line
when the options were parsed strictly, and is one warning line naming the value used instead when they were read as
PaddleSpeech reads them (the drop-ins). Warnings go to the ``speechperf.profiler`` logger (stderr when logging is not
configured) and into the summary's notes.

A backend subclasses this and implements ``_open``, ``_advance`` and ``_close``; a backend that profiles a
session rather than the process (onnxruntime) also overrides ``attach``. The step counting keeps its state in
name-mangled ``__`` attributes, so a subclass may use any ``_name`` of its own (``self._step_ns`` included) without
touching it; what a subclass reads is public: ``options`` (``options.batch_range``), ``step_num``, ``warnings``,
``step_spans()`` (each recorded step's wall time, for the category table).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

import attrs

from speechperf.errors import SpeechperfError
from speechperf.outputs import check_output_folder, check_output_path
from speechperf.profiler.categories import CategoryTable, json_path_beside
from speechperf.profiler.options import ProfilerOptionError, ProfilerOptions
from speechperf.profiler.summary import OpStat, ProfileSummary, StepTiming, sort_ops

log = logging.getLogger("speechperf.profiler")


def warn_line(message: str) -> None:
    """One warning line: the ``speechperf.profiler`` logger, which prints to stderr when logging is not set up."""
    log.warning(message)


class ProfilerError(SpeechperfError):
    """A profiler that cannot run as asked on this machine or in this loop."""


@attrs.frozen
class Recorded:
    """What a backend hands back when its profiler stops."""

    ops: tuple[OpStat, ...] | list[OpStat] = ()
    steps: tuple[int, ...] = ()
    trace_path: Path | None = None
    raw_path: Path | None = None
    notes: tuple[str, ...] = ()
    #: The recorded steps by op category (None where the backend cannot split a step into ops).
    categories: CategoryTable | None = None


class StepProfiler:
    #: The backend name, as registered.
    backend: str = ""
    #: Steps the framework profiler runs before ``batch_range[0]`` and discards (0 where it has no such notion).
    warmup_steps: int = 1
    #: What a row of the op table is, in the framework's terms.
    source: str = ""

    def __init__(self, options: ProfilerOptions | str | None = None, *, echo: bool = True):
        self.options = ProfilerOptions.coerce(options)
        if self.options.backend is not None and self.options.backend != self.backend:
            raise ProfilerOptionError(
                f"backend={self.options.backend!r} in the profiler options, but this is the {self.backend!r} "
                f"profiler; allowed: backend={self.backend} or no backend key"
            )
        #: Print the summary when the range ends.
        self.echo = echo
        #: Set by a caller that ends the loop (or the process) once ``finished``: the PaddleSpeech hook,
        #: ``speechperf profile``. Otherwise an explicit ``exit_on_finished=true`` is warned about, not honoured.
        self.ends_loop_when_finished = False
        #: The compute roof (GFLOP/s, what it is) at the thread count profiled, where the caller knows it
        #: (``speechperf profile``): the summary then lists the ops furthest below it.
        self.roof: tuple[float, str] | None = None
        #: Warning lines for this run: the options' own (lenient parsing) and the backend's.
        self.warnings: list[str] = []
        for line in self.options.warnings:
            self.warn(line)
        #: The number of the step now running (0 after entering the context).
        self.step_num = 0
        #: The result, once the range has ended (or the loop ended early).
        self.summary: ProfileSummary | None = None
        self.__start, self.__end = self.options.batch_range
        timer_only = self.options.timer_only
        self.__open_at = self.__start if timer_only else max(self.__start - self.warmup_steps, 0)
        #: The first step the timer figures cover (the op table covers batch_range), and the first step boundary
        #: that does any work.
        self.__time_from = timer_start(self.options)
        self.__first = min(self.__open_at, self.__time_from)
        self.__opened = False
        self.__done = False
        self.__t = 0
        self.__step_ns: list[int] = []
        self.__range_ns: dict[int, int] = {}
        self.__samples: list[int | None] = []
        self.__reader_ns: list[int] = []
        self.__reader_acc = 0
        self.__reader_hooked = False

    # -- the protocol -------------------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once ``batch_range`` has ended and the summary exists."""
        return self.__done

    def attach(self, session):
        """The session to call inside the loop. Most frameworks profile the whole process: it is ``session``."""
        return session

    def __enter__(self) -> StepProfiler:
        self.step_num = 0
        if (
            "exit_on_finished" in self.options.given
            and self.options.exit_on_finished
            and not self.ends_loop_when_finished
        ):
            self.warn(
                "exit_on_finished=true: a step profiler used directly does not end the process; stop the loop when "
                "prof.finished is True (add_profiler_step exits, as PaddleSpeech does)"
            )
        self.__reader_hooked = self._hook_reader()
        if self.__first == 0:
            self.__boundary(None)
        else:
            self.__t = time.perf_counter_ns()
        return self

    def step(self, num_samples: int | None = None) -> None:
        """End the current step (``num_samples`` in it, for samples/s) and begin the next."""
        self.step_num += 1
        if self.step_num < self.__first or self.__done:
            return  # the cheap path before the timer and the profiler start
        self.__boundary(num_samples)

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:  # never swallows the loop's exception
        self.__unhook()
        if self.__done:
            return False
        if exc_type is not None:
            if self.__opened:
                self._abort()
            self.__done = True
            return False
        ran = self.step_num  # steps completed: step() was called this many times
        if ran < self.__end:
            note = f"the loop ended after {ran} steps, before batch_range {list(self.options.batch_range)} ended; " + (
                f"steps {self.__start}..{ran - 1} were recorded" if ran > self.__start else "no step was recorded"
            )
            warn_line(note)
            self.__finish((note,))
        return False

    def timed(self, iterable: Iterable) -> Iterator:
        """Iterate ``iterable``, counting the time each ``next()`` takes as the step's reader_cost (for a loader the
        backend does not hook)."""
        it = iter(iterable)
        while True:
            t = time.perf_counter_ns()
            try:
                item = next(it)
            except StopIteration:
                return
            self.add_reader_time(time.perf_counter_ns() - t)
            yield item

    def add_reader_time(self, ns: int) -> None:
        """``ns`` spent loading data in the current step."""
        self.__reader_acc += ns

    def warn(self, message: str) -> None:
        """One warning line now, kept for the summary's notes."""
        if message not in self.warnings:
            self.warnings.append(message)
            warn_line(message)

    def chose(self, key: str) -> bool:
        """The loop's own options gave ``key``: a strict string, or a key the lenient string named (not a drop-in's
        default such as the s2t drop-in's ``api=legacy``)."""
        return self.options.strict or key in self.options.given

    def refuse_or_warn(self, message: str, instead: str) -> None:
        """An option this backend cannot honour: refused (strict options) or warned about, naming ``instead``."""
        if self.options.strict:
            raise ProfilerOptionError(message)
        self.warn(f"{message}; {instead}")

    # -- for backends -------------------------------------------------------------------------------------------

    def _hook_reader(self) -> bool:
        """Start timing the framework's data loader ``next()`` into ``add_reader_time``; True if hooked."""
        return False

    def _unhook_reader(self) -> None:
        """Undo ``_hook_reader``."""

    def __unhook(self) -> None:
        if self.__reader_hooked:
            self.__reader_hooked = False
            self._unhook_reader()

    def _open(self, step: int) -> None:
        """Start the framework profiler as step ``step`` begins (``batch_range[0]`` or the warm-up step before)."""
        raise NotImplementedError

    def _advance(self, step: int, num_samples: int | None) -> None:
        """Step ``step`` begins, inside the range (after the first recorded step)."""
        raise NotImplementedError

    def _close(self) -> Recorded:
        """Stop the framework profiler, write its trace and return its data."""
        raise NotImplementedError

    def _abort(self) -> None:
        """The loop raised: stop the framework profiler; its result is not needed."""
        try:
            self._close()
        except Exception:
            pass

    def step_spans(self) -> dict[int, int]:
        """Each step of ``batch_range`` that has ended -> its wall time in ns, timed by the clock that times every
        backend's steps (the summary's batch_cost; the profiler's own bookkeeping between steps left out). In
        ``_close`` it holds every recorded step: the ``step_ns`` a profiler that times no step of its own passes to
        ``speechperf.profiler.categories.build`` (docs/backends.md, "Step profiler")."""
        return dict(self.__range_ns)

    def trace_file(self, default_name: str) -> Path:
        """The file the trace goes to: ``profile_path``, or ``default_name`` inside it when it is a folder."""
        return trace_path_of(self.options.profile_path, default_name)

    # -- step counting ------------------------------------------------------------------------------------------

    def __boundary(self, num_samples: int | None) -> None:
        n = self.step_num
        ended = time.perf_counter_ns() - self.__t
        if self.__start < n <= self.__end:  # step n-1 of batch_range ended
            self.__range_ns[n - 1] = ended
        if self.__time_from < n <= self.__end:  # step n-1 was in the timer's window
            self.__step_ns.append(ended)
            self.__samples.append(num_samples)
            self.__reader_ns.append(self.__reader_acc)
        if not self.options.timer_only and n >= self.__open_at:
            if n == self.__open_at:
                self._open(n)
                self.__opened = True
            elif self.__opened and n < self.__end:
                self._advance(n, num_samples)
        if n == self.__end:
            self.__finish(())
        self.__reader_acc = 0
        self.__t = time.perf_counter_ns()  # the profiler's own bookkeeping is not part of the next step

    def __finish(self, notes: tuple[str, ...]) -> None:
        recorded = self._close() if self.__opened else Recorded()
        self.__done = True
        self.__unhook()
        steps = tuple(s for s in recorded.steps if s < self.step_num)
        if self.__opened and not recorded.ops and steps:
            self.warn(
                f"the {self.backend} profiler recorded 0 ops in steps {steps[0]}..{steps[-1]}: the loop runs no "
                f"{self.backend} op; give backend= for the framework it uses (backend=torch, backend=paddle)"
            )
        timing = StepTiming(tuple(self.__step_ns), tuple(self.__samples), tuple(self.__reader_ns))
        if self.__time_from != self.__start and timing.steps:
            last = self.__time_from + timing.steps - 1
            notes = (
                *notes,
                f"timer figures: steps {self.__time_from}..{last}, paddle's own timer's window (timer_window=paddle_timer: "
                f"from the 10th step after the first to the range's end); timer_window=range times steps "
                f"{self.__start}..{self.__end - 1} only",
            )
        categories_path = None
        if recorded.categories is not None and recorded.trace_path is not None and timing.steps:
            categories_path = json_path_beside(recorded.trace_path)
            table = recorded.categories.document(perf_summary=timing.perf_summary(), ips_unit=timing.ips_unit)
            table.write(categories_path, "category table")
        self.summary = ProfileSummary(
            backend=self.backend,
            sorted_key=self.options.sorted_key,
            ops=sort_ops(recorded.ops, self.options.sorted_key),
            # a step the framework saw begin but that never ended (the loop stopped) is not a recorded step
            steps=steps,
            timing=timing,
            trace_path=recorded.trace_path,
            raw_path=recorded.raw_path,
            source=self.source if self.__opened else "timer only",
            notes=(*notes, *recorded.notes, *self.warnings),
            categories=recorded.categories,
            categories_path=categories_path,
            roof=self.roof,
        )
        if self.echo:
            self.summary.render()


#: paddle's timer (paddle/profiler/timer.py, ``Event.skip_iter``) leaves its first steps out of its summary.
PADDLE_TIMER_SKIP = 10


def timer_start(options: ProfilerOptions) -> int:
    """The first step the timer figures cover. ``timer_window=range``: ``batch_range[0]``. ``timer_window=paddle_timer``:
    what ``paddle.profiler.Profiler(timer_only=True)`` started at step 0 averages, steps 9 .. end-1 (its records
    from the 10th on: ``total_iters >= skip_iter`` after counting the step); paddle prints nothing for a range
    ending at step 10 or before, where the range's own steps are timed instead."""
    if options.timer_window == "range" or options.end <= PADDLE_TIMER_SKIP:
        return options.start
    return PADDLE_TIMER_SKIP - 1


def trace_path_of(profile_path: str, default_name: str) -> Path:
    """Where a trace is written: ``profile_path``, or ``default_name`` inside it when it is a folder (or spelled as
    one, as the t2s drop-in's ``profiler_log/``), checked as every output is (speechperf.outputs). A symlink gives
    its target: every framework's profiler unlinks the path before writing, so the link itself must never be
    handed to it, or it would become a regular file."""
    path = Path(profile_path).expanduser().absolute()  # the summary says where the file is, wherever the loop ran
    if profile_path.endswith(("/", os.sep)) or _is_folder(path):
        path = check_output_folder(path, "profile_path") / default_name
    trace = check_output_path(path, "profile_path")
    check_output_path(json_path_beside(trace), "profile_path (its category table)")
    return trace


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the OS: check_output_path says so in one line
        return False
