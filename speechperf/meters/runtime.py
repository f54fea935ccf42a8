"""Runtime: seconds per sample for one forward of a stage, with every raw timing kept.

Definition (docs/architecture.md, "Measurements"). One *forward* is whatever the benchmark passes as ``forward``:
the session calls of one stage plus its numpy decoding loop. Each call is timed with ``time.perf_counter_ns``; when a
backend is given, ``backend.synchronize(device)`` runs before the clock stops, so asynchronous device work is inside
the timing.

Per sample: ``warmup`` untimed forwards (their timings are still kept, in ``warmup_ns``), then ``repeat`` timed ones.
A sample's runtime is the **median of its repeats**. The summary statistics (mean, median, stdev, min, max,
p50/p90/p99, ``speechperf.stats.Stats``) are over the per-sample runtimes, in seconds; stdev is the sample standard
deviation (n-1), None for one sample;
percentiles use linear interpolation between closest ranks (numpy's default ``"linear"``, Hyndman & Fan type 7).

First call on a new input shape: given each sample's input ``shape`` (``first_call.shape_key``), the meter knows
which samples met a shape the session had not run; ``shape_warmup`` untimed forwards warm each new shape before its
repeats. ``RuntimeResult.first_call_per_shape`` is that cost (the rule is in ``speechperf.meters.first_call``).

Noise: the spread of the repeats of one sample is its coefficient of variation (stdev/mean). When the median of
that over the samples exceeds ``noise_threshold`` (10%), ``RuntimeResult.noise_warning`` says so and what to do.
With fewer than 3 repeats per sample, noise cannot be estimated, and the warning says that instead. When the first
repeats are found to carry the first-call-per-shape cost, they are left out of the noise estimate. Each timed
repeat also records the CPU time of the calling thread (``time.thread_time_ns``, ``SampleTiming.cpu_ns``): when the
wall times vary and that CPU time does not, the work did not change and the variation is time the thread spent off
the CPU (other processes on its core, waits on other threads); the warning says which, with both figures. On
Linux each repeat also records how long the thread waited runnable for a CPU (``wait_ns``, from
``/proc/thread-self/schedstat``): the share of the timed wall time spent so is the time other processes took.

Cold start is separate from steady state: ``measure_cold_start(load, first_call)`` times model loading and the first
call on the loaded session.

Use::

    meter = RuntimeMeter(backend, device="cpu", warmup=1, repeat=5)
    for sample_id, feeds in data:
        meter.measure(sample_id, lambda: session(feeds))   # returns SampleTiming, or SampleFailure if it raised
    result = meter.result()   # RuntimeResult: .samples (raw ns), .failures, .stats, .noise_warning
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable

import attrs

from speechperf.meters import first_call as per_shape  # not `first_call`: SampleTiming has a property of that name
from speechperf.meters.samples import SampleFailure, check_count, failure
from speechperf.stats import PERCENTILE_METHOD, Stats

__all__ = ["PERCENTILE_METHOD", "ColdStart", "RuntimeMeter", "RuntimeResult", "SampleTiming", "Stats"]

NOISE_THRESHOLD = 0.10


@attrs.frozen
class SampleTiming:
    sample_id: str
    ns: tuple[int, ...]  # one per timed repeat
    warmup_ns: tuple[int, ...] = ()
    #: its first call (the first of warmup_ns, else of ns) met an input shape the session had not run before
    new_shape: bool = False
    #: the calling thread's CPU time during each timed repeat (empty where not recorded: a batch's share)
    cpu_ns: tuple[int, ...] = ()
    #: the calling thread's wait for a CPU (runnable, not running) during each timed repeat (empty where unknown)
    wait_ns: tuple[int, ...] = ()

    @property
    def seconds(self) -> float:
        """This sample's runtime: the median of its repeats, in seconds."""
        return statistics.median(self.ns) / 1e9

    @property
    def spread(self) -> float | None:
        """Coefficient of variation of the repeats, or None with fewer than 3."""
        if len(self.ns) < 3:
            return None
        return per_shape.coefficient_of_variation(self.ns)

    @property
    def first_call(self) -> per_shape.FirstCall | None:
        """Its first call on a new shape against its later calls; None when its shape had been run before."""
        if not self.new_shape:
            return None
        if self.warmup_ns:
            return per_shape.FirstCall(self.warmup_ns[0], self.ns)
        return per_shape.FirstCall(self.ns[0], self.ns[1:])


@attrs.frozen
class ColdStart:
    """Seconds to load the model, and seconds of the first call on the loaded session."""

    load_s: float
    first_call_s: float

    @property
    def total_s(self) -> float:
        return self.load_s + self.first_call_s


@attrs.frozen
class RuntimeResult:
    samples: tuple[SampleTiming, ...]
    failures: tuple[SampleFailure, ...]
    warmup: int
    repeat: int
    noise_threshold: float = NOISE_THRESHOLD
    cold_start: ColdStart | None = None

    @property
    def per_sample_seconds(self) -> dict[str, float]:
        return {s.sample_id: s.seconds for s in self.samples}

    @property
    def stats(self) -> Stats | None:
        """Statistics over the per-sample runtimes (seconds); None when no sample succeeded."""
        return Stats.of([s.seconds for s in self.samples])

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.samples)

    @property
    def first_call_per_shape(self) -> per_shape.ShapeCost | None:
        """The cost of the first call on a new input shape, from the per-shape warm-ups when they ran, else from
        the first repeats; None when no sample met a new shape with enough calls."""
        firsts = [(s, c) for s in self.samples if (c := s.first_call) is not None]  # the samples of a new shape
        warmed = [c for s, c in firsts if s.warmup_ns]
        if warmed:
            return per_shape.shape_cost(warmed, per_shape.FROM_WARMUP)
        return per_shape.shape_cost([c for _, c in firsts], per_shape.FROM_REPEATS)

    @property
    def _first_repeats_are_shape_cost(self) -> bool:
        cost = self.first_call_per_shape
        return cost is not None and cost.detected and cost.source == per_shape.FROM_REPEATS

    @property
    def noise(self) -> float | None:
        """Median over samples of the coefficient of variation of their repeats, leaving out the first repeats
        when they carry the first-call-per-shape cost; None when not estimable."""
        return self._median_spread(lambda s: s.ns)

    @property
    def cpu_noise(self) -> float | None:
        """``noise`` of the calling thread's CPU time per repeat; None where it was not recorded."""
        return self._median_spread(lambda s: s.cpu_ns)

    @property
    def run_queue_share(self) -> float | None:
        """The share of the timed wall time the calling thread waited runnable for a CPU; None where unknown."""
        waited = [s for s in self.samples if s.wait_ns]
        wall = sum(sum(s.ns) for s in waited)
        return sum(sum(s.wait_ns) for s in waited) / wall if waited and wall > 0 else None

    def _median_spread(self, values: Callable[[SampleTiming], tuple[int, ...]]) -> float | None:
        skip = self._first_repeats_are_shape_cost
        spreads = []
        for s in self.samples:
            timed = values(s)
            if len(timed) < 3:
                continue
            spread = per_shape.coefficient_of_variation(
                timed[1:] if skip and s.new_shape and not s.warmup_ns else timed
            )
            if spread is not None:
                spreads.append(spread)
        return statistics.median(spreads) if spreads else None

    @property
    def shape_note(self) -> str | None:
        """A line when the first call on a new input shape costs measurably more than the later ones."""
        cost = self.first_call_per_shape
        if cost is None or not cost.detected:
            return None
        if cost.source == per_shape.FROM_WARMUP:
            return cost.describe() + "; warmed before timing, so not in the figures above"
        return (
            cost.describe() + "; it is in each sample's first repeat, left out of the noise estimate; "
            "--set general.warmup_per_shape=true warms every new shape before timing it"
        )

    @property
    def noise_warning(self) -> str | None:
        if not self.samples:
            return None
        noise = self.noise
        if noise is None:
            return (
                f"runtime noise cannot be estimated with repeat={self.repeat}: "
                "use --repeat 3 or more to see whether these timings are stable"
            )
        if noise > self.noise_threshold:
            return (
                f"runtime is noisy: repeats of the same sample vary by {noise:.0%} (coefficient of variation, median "
                f"over samples; threshold {self.noise_threshold:.0%}){self._noise_cause()}; close other busy "
                "programs, pin threads (--threads), raise --warmup and --repeat, and re-run before trusting these "
                "numbers"
                + (
                    " (first repeats left out: they carry the first-call-per-shape cost)"
                    if self._first_repeats_are_shape_cost
                    else ""
                )
            )
        return None

    def _noise_cause(self) -> str:
        """Where the variation is, measured: in the work (the calling thread's CPU time varies as much) or off
        the CPU (it does not)."""
        cpu, queued = self.cpu_noise, self.run_queue_share
        text = ""
        if cpu is not None and cpu <= self.noise_threshold:
            text = (
                f"; the calling thread's CPU time varies by only {cpu:.0%}: the work did not change, the thread "
                "waited off the CPU (other processes on its core, or waits on other threads)"
            )
        elif cpu is not None:
            text = (
                f"; the calling thread's CPU time varies by {cpu:.0%} too: the same work took more or less CPU "
                "time (caches and memory shared with other processes, the CPU's clock, work the framework does on "
                "some calls)"
            )
        if queued is not None:
            text += f"; it waited for a CPU (runnable, other threads running) {queued:.0%} of its timed wall time"
        return text


class _Schedstat:
    """The calling thread's ``/proc/thread-self/schedstat``, opened once and read with one ``pread`` a call: opening
    it on every call (three system calls) left the next timed call 0.8% slower on a 1.1 ms call, one pread about
    0.2% (``speechperf check --meters runtime``, 400 pairs each). None where there is no such file."""

    def __init__(self) -> None:
        try:
            self.fd: int | None = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self.fd = None

    def __del__(self) -> None:  # the thread ended (its local went) or a child process dropped the parent's
        if self.fd is not None:
            os.close(self.fd)


_schedstat = threading.local()


def _reset_after_fork() -> None:
    global _schedstat
    _schedstat = threading.local()  # the child's thread is another: its file is opened again on first use


os.register_at_fork(after_in_child=_reset_after_fork)


def run_queue_ns() -> int | None:
    """Nanoseconds the calling thread has waited runnable for a CPU so far (Linux's schedstat); None elsewhere."""
    stat = getattr(_schedstat, "stat", None)
    if stat is None:
        stat = _schedstat.stat = _Schedstat()
    if stat.fd is None:
        return None
    try:
        return int(os.pread(stat.fd, 128, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return None


class RuntimeMeter:
    """Times one forward per sample; see the module docstring for the exact definition."""

    name = "runtime"

    def __init__(
        self,
        backend=None,
        device: str = "cpu",
        warmup: int = 1,
        repeat: int = 5,
        noise_threshold: float = NOISE_THRESHOLD,
        shape_warmup: int = 0,
        seen_shapes=(),
    ):
        self.warmup = check_count("warmup", warmup, 0)
        self.repeat = check_count("repeat", repeat, 1)
        self.shape_warmup = check_count("shape_warmup", shape_warmup, 0)
        self._seen_shapes = set(seen_shapes)  # input shapes the session has already run (a warm-up's)
        self.noise_threshold = noise_threshold
        self.device = device
        self._sync = (lambda: backend.synchronize(device)) if backend is not None else (lambda: None)
        self._samples: list[SampleTiming] = []
        self._failures: list[SampleFailure] = []
        self._cold: ColdStart | None = None

    def time_once(self, forward: Callable[[], object]) -> int:
        """Nanoseconds of one forward, synchronized before the clock stops."""
        clock, sync = time.perf_counter_ns, self._sync
        start = clock()
        forward()
        sync()
        return clock() - start

    def measure(self, sample_id: str, forward: Callable[[], object], shape=None) -> SampleTiming | SampleFailure:
        """``shape``: a hashable key of the input's shapes; a sample whose shape was not run before is warmed
        ``shape_warmup`` more times and marked ``new_shape``."""
        clock, cpu_clock, sync = time.perf_counter_ns, time.thread_time_ns, self._sync
        warm: list[int] = []
        timed: list[int] = []
        cpu: list[int] = []
        waits: list[int] = []
        new_shape = shape is not None and shape not in self._seen_shapes
        if shape is not None:
            self._seen_shapes.add(shape)
        try:
            for _ in range(self.warmup + (self.shape_warmup if new_shape else 0)):
                start = clock()
                forward()
                sync()
                warm.append(clock() - start)
            for _ in range(self.repeat):
                queued = run_queue_ns()
                cpu_start = cpu_clock()
                start = clock()
                forward()
                sync()
                timed.append(clock() - start)
                cpu.append(cpu_clock() - cpu_start)
                if queued is not None and (now := run_queue_ns()) is not None:
                    waits.append(now - queued)
        except Exception as exc:
            record = failure(sample_id, self.name, exc)
            self._failures.append(record)
            return record
        wait = tuple(waits) if len(waits) == len(timed) else ()
        timing = SampleTiming(str(sample_id), tuple(timed), tuple(warm), new_shape, tuple(cpu), wait)
        self._samples.append(timing)
        return timing

    def measure_cold_start(self, load: Callable[[], object], first_call: Callable[[object], object]) -> ColdStart:
        """Time ``load()`` (returns a session), then ``first_call(session)``; kept as ``result().cold_start``."""
        start = time.perf_counter_ns()
        session = load()
        loaded = time.perf_counter_ns()
        first_call(session)
        self._sync()
        done = time.perf_counter_ns()
        self._cold = ColdStart((loaded - start) / 1e9, (done - loaded) / 1e9)
        return self._cold

    def result(self) -> RuntimeResult:
        return RuntimeResult(
            tuple(self._samples), tuple(self._failures), self.warmup, self.repeat, self.noise_threshold, self._cold
        )
