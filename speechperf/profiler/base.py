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
everywhere, reports step time and ips, and writes no trace.

A backend subclasses this and implements ``_open``, ``_advance`` and ``_close``; a backend that profiles a
session rather than the process (onnxruntime) also overrides ``attach``.
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs

from speechperf.errors import SpeechperfError
from speechperf.profiler.options import ProfilerOptionError, ProfilerOptions
from speechperf.profiler.summary import OpStat, ProfileSummary, StepTiming, sort_ops


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
        #: The number of the step now running (0 after entering the context).
        self.step_num = 0
        #: The result, once the range has ended (or the loop ended early).
        self.summary: ProfileSummary | None = None
        self._start, self._end = self.options.batch_range
        timer_only = self.options.timer_only
        self._open_at = self._start if timer_only else max(self._start - self.warmup_steps, 0)
        self._opened = False
        self._done = False
        self._t = 0
        self._step_ns: list[int] = []
        self._samples: list[int | None] = []

    # -- the protocol -------------------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once ``batch_range`` has ended and the summary exists."""
        return self._done

    def attach(self, session):
        """The session to call inside the loop. Most frameworks profile the whole process: it is ``session``."""
        return session

    def __enter__(self) -> StepProfiler:
        self.step_num = 0
        if self._open_at == 0:
            self._boundary(None)
        else:
            self._t = time.perf_counter_ns()
        return self

    def step(self, num_samples: int | None = None) -> None:
        """End the current step (``num_samples`` in it, for samples/s) and begin the next."""
        self.step_num += 1
        if self.step_num < self._open_at or self._done:
            return  # the cheap path outside the range
        self._boundary(num_samples)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._done:
            return False
        if exc_type is not None:
            if self._opened:
                self._abort()
            self._done = True
            return False
        ran = self.step_num  # steps completed: step() was called this many times
        if ran < self._end:
            note = f"the loop ended after {ran} steps, before batch_range {list(self.options.batch_range)} ended; " + (
                f"steps {self._start}..{ran - 1} were recorded" if ran > self._start else "no step was recorded"
            )
            self._finish((note,))
        return False

    # -- for backends -------------------------------------------------------------------------------------------

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

    def trace_file(self, default_name: str) -> Path:
        """The file the trace goes to: ``profile_path``, or ``default_name`` inside it when it is a folder."""
        path = Path(self.options.profile_path).expanduser()
        if path.is_dir():
            path = path / default_name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    # -- step counting ------------------------------------------------------------------------------------------

    def _boundary(self, num_samples: int | None) -> None:
        n = self.step_num
        if self._start < n <= self._end:  # step n-1 was in the range
            self._step_ns.append(time.perf_counter_ns() - self._t)
            self._samples.append(num_samples)
        if not self.options.timer_only:
            if n == self._open_at:
                self._open(n)
                self._opened = True
            elif self._opened and n < self._end:
                self._advance(n, num_samples)
        if n == self._end:
            self._finish(())
        self._t = time.perf_counter_ns()  # the profiler's own bookkeeping is not part of the next step

    def _finish(self, notes: tuple[str, ...]) -> None:
        recorded = self._close() if self._opened else Recorded()
        self._done = True
        self.summary = ProfileSummary(
            backend=self.backend,
            sorted_key=self.options.sorted_key,
            ops=sort_ops(recorded.ops, self.options.sorted_key),
            # a step the framework saw begin but that never ended (the loop stopped) is not a recorded step
            steps=tuple(s for s in recorded.steps if s < self.step_num),
            timing=StepTiming(tuple(self._step_ns), tuple(self._samples)),
            trace_path=recorded.trace_path,
            raw_path=recorded.raw_path,
            source=self.source if self._opened else "timer only",
            notes=(*notes, *recorded.notes),
        )
        if self.echo:
            self.summary.render()
