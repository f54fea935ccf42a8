"""``speechperf check``: validate every meter on the machine it runs on, as a pass/fail table.

Rows, by meter:

- runtime: the timer's resolution (``time.perf_counter_ns``, smallest step seen, target <= 1 us); the runtime meter's
  per-call cost on a do-nothing session versus a bare ``perf_counter_ns`` loop over it (target <= 1 us more); and on a
  real numpy session of about 1 ms (single-threaded elementwise compute), the meter's added cost as the median of
  paired ratios (the fastest of 5 calls the meter timed over the fastest of the 5 bare calls next to them, the
  order alternating and each two pairs of opposite order taken together), in rounds of 20 pairs (60 at least with
  --quick, 200 otherwise) until its
  distribution-free 95% interval lies at or under 1.02 (pass) or wholly above it (FAIL), or the pairs run out (400
  with --quick, 1000 otherwise: FAIL, too noisy to tell). Neighbouring blocks, not long alternating ones: long
  blocks drift apart by a few percent on a shared machine (their median ratio read 1.01-1.07 on an idle one).
- memory: each method against a known allocation: a session that allocates and touches N MiB (50 and 200) and holds
  it for about 5 ms must read ``delta = N`` within 5%. The exact method ("hwm") decides the verdict; fairseq's
  sampling method (memory_profiler) is shown beside it for information.
- flops: per backend, the analytic count of a known matmul (``2*m*n*k``) and a known 1-D conv, built in that
  framework (``backend.known_session``), must equal the formula, and the output must match numpy's.
- papi: whether hardware FLOP counters work here, and why not.
- threads: per backend, a session pinned to 1 thread must use about one core (process CPU time / wall time, through
  ``speechperf.threads.cpu_wall_ratio``, target <= 1.3); the ratio at 2 threads is shown for information.
- roofline: the machine's compute and memory roofs at each thread count asked (``speechperf.meters.roofs``): the
  fp32 GEMM through numpy and every backend, int8 where a backend has the kernel, and the memory bandwidth; they
  are cached for bench, compare and profile. Trustworthy when both roofs were measured at every thread count on a
  quiet machine: roofs measured while other processes kept cores busy are low, so they are cached marked busy,
  never in place of trusted ones nor used for a % of peak.

A meter is trustworthy here when every row of it that decides its verdict passes. A backend lacking a capability a
check needs (no module, or a module whose function raises ``CapabilityUnavailableError``, as the plugin template's
stubs do) gives an "unavailable" row, which decides nothing: it is never a FAIL. A meter with no deciding row at all
is "unavailable"; the CLI exits 1 when a meter is NOT trustworthy, or unavailable although the user named it in
``--meters``, never for an unavailable meter the user did not ask for.
"""

from __future__ import annotations

import contextlib
import functools
import math
import mmap
import os
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np
import psutil

from speechperf.backend import CapabilityUnavailableError, Session, TensorInfo, hooks
from speechperf.backend.capabilities import capability_module_name
from speechperf.extras import MissingExtraError
from speechperf.meters.flops import KnownGraph
from speechperf.meters.memory import MIB, MemoryMeter, hwm_status
from speechperf.meters.papi import papi_status
from speechperf.meters.runtime import RuntimeMeter
from speechperf.meters.samples import SampleFailure, parse_meter_names
from speechperf.threads import free_cores

PASS, FAIL, UNAVAILABLE, INFO = "pass", "FAIL", "unavailable", "info"
DEFAULT_METERS = ("runtime", "memory", "flops", "threads", "roofline")
MEMORY_SIZES_MIB = (50, 200)
MEMORY_TOLERANCE = 0.05
#: The most the runtime meter may add to a real call of about 1 ms: 2%, at the upper end of the 95% interval.
RUNTIME_RATIO_TARGET = 1.02
THREAD_RATIO_TARGET = 1.3


@attrs.frozen
class CheckRow:
    meter: str
    check: str
    measured: str
    target: str
    status: str
    decides: bool = True  # False: shown for information, does not decide whether the meter is trustworthy
    note: str = ""


@attrs.frozen
class CheckReport:
    rows: tuple[CheckRow, ...]

    def trustworthy(self, meter: str) -> bool:
        deciding = [r for r in self.rows if r.meter == meter and r.decides]
        return bool(deciding) and all(r.status == PASS for r in deciding)

    def unavailable(self, meter: str) -> bool:
        """No row of ``meter`` decides: every backend lacks what it needs (or none was checked)."""
        return not any(r.meter == meter and r.decides for r in self.rows)

    def verdict(self, meter: str) -> str:
        if self.unavailable(meter):
            return "unavailable"
        return "trustworthy" if self.trustworthy(meter) else "NOT trustworthy"

    def untrustworthy(self, meters: Iterable[str], named: bool = True) -> list[str]:
        """The meters that fail the check: NOT trustworthy ones, and unavailable ones when ``named`` (the user asked
        for them by name) -- an unavailable meter nobody asked for is no failure."""
        return [m for m in meters if self.verdict(m) == "NOT trustworthy" or (named and self.unavailable(m))]


# --- sessions with known behaviour (framework-free) -------------------------------------------------------------


class NullSession(Session):
    """Does nothing: what remains is the cost of calling and timing."""

    backend = "numpy"
    inputs = ()
    outputs = ()

    def run(self, feeds):
        return {}


class ComputeSession(Session):
    """A real, single-threaded numpy computation: ``tanh(x) * x`` over a float32 vector (elementwise numpy does not
    use BLAS threads, whose wake-ups on a loaded machine would swamp what is measured)."""

    backend = "numpy"
    inputs = (TensorInfo("x", "float32"),)
    outputs = (TensorInfo("y", "float32"),)

    def run(self, feeds):
        x = feeds["x"]
        return {"y": np.tanh(x) * x}


class AllocSession(Session):
    """Allocates ``mib`` MiB, writes every page, holds it for ``hold_s`` seconds, then frees it."""

    backend = "numpy"
    inputs = ()
    outputs = ()

    def __init__(self, mib: float, hold_s: float = 0.005):
        self.size = int(mib * MIB)
        self.hold_s = hold_s

    def run(self, feeds):
        with resident_block(self.size):
            end = time.perf_counter() + self.hold_s
            while time.perf_counter() < end:
                pass
        return {}


@contextlib.contextmanager
def resident_block(size: int) -> Iterator[None]:
    """``size`` bytes of new resident memory while the block runs: an anonymous mapping with every page written.

    Not ``np.ones``: glibc's malloc looks in its free lists before it maps new memory, and a process that earlier
    freed a large region of its heap (a model build, a long test run) keeps those pages resident, so ``np.ones``
    can be carved out of them and move RSS by nothing. A known allocation must be new pages whatever came before.
    """
    block = mmap.mmap(-1, size)
    pages = np.frombuffer(block, dtype=np.uint8)
    try:
        pages[:: mmap.PAGESIZE] = 1  # one write per page makes the whole mapping resident
        yield
    finally:
        del pages  # the mapping cannot close while a view of it exists
        block.close()


def compute_feeds(target_s: float = 0.001) -> dict[str, np.ndarray]:
    """Feeds for ComputeSession sized so one call takes about ``target_s`` on this machine.

    Each size is timed as the smallest of 3 medians of 9 calls, so one burst of load elsewhere does not stop the
    search at a size far too small.
    """
    session = ComputeSession()
    n = 4096
    while True:
        feeds = {"x": np.random.default_rng(0).standard_normal(n).astype(np.float32)}
        for _ in range(3):
            session(feeds)
        median = min(statistics.median(bare_loop_ns(functools.partial(session, feeds), 9)) for _ in range(3)) / 1e9
        if median >= target_s or n >= 2**26:
            return feeds
        n = int(n * min(4.0, max(1.1, target_s / median)))


def bare_loop_ns(forward: Callable[[], object], calls: int) -> list[int]:
    clock = time.perf_counter_ns
    out = []
    for _ in range(calls):
        start = clock()
        forward()
        out.append(clock() - start)
    return out


# --- the checks -------------------------------------------------------------------------------------------------


def check_timer() -> list[CheckRow]:
    clock = time.perf_counter_ns
    steps = []
    for _ in range(20_000):
        a = clock()
        b = clock()
        while b == a:
            b = clock()
        steps.append(b - a)
    step = min(steps)
    declared = time.get_clock_info("perf_counter").resolution * 1e9
    return [
        CheckRow(
            "runtime",
            "timer resolution (perf_counter_ns, smallest step)",
            f"{step} ns (declared {declared:.0f} ns)",
            "<= 1000 ns",
            PASS if step <= 1000 else FAIL,
        )
    ]


def _timings(meter: RuntimeMeter, sample_id: str, forward: Callable[[], object]) -> list[int]:
    """The timed repeats of one sample; the check's own sessions never fail, so a failure is a bug here."""
    timing = meter.measure(sample_id, forward)
    if isinstance(timing, SampleFailure):
        raise RuntimeError(timing.message)
    return list(timing.ns)


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The distribution-free confidence interval of the median of ``values`` (the order statistics the binomial
    distribution puts around it, as the sign test does): no assumption on the shape of the timings' noise."""
    from scipy.stats import binom  # scipy is slow to import; only this check needs it here

    ordered = sorted(values)
    n = len(ordered)
    rank = max(int(binom.ppf((1 - confidence) / 2, n, 0.5)), 1)  # 1-based rank of the lower end
    return ordered[rank - 1], ordered[n - rank]


def paired_ratios(
    forward: Callable[[], object], meter: RuntimeMeter, pairs: int, start: int = 0, calls: int = 5
) -> list[float]:
    """``pairs`` ratios of a block of ``calls`` calls timed by ``meter`` over the block next to it timed by a bare
    loop, which goes first in every other pair, each block as its fastest call: neighbouring blocks share the
    machine's state (its load, clock, caches), so each ratio holds the meter's added cost and little of the drift
    that moves whole stretches of calls; and the fastest of a few calls is one no other process broke into, where
    a single call on a loaded machine may take several times its length (meter_ns / bare_ns of 0.4-2.3 between
    the quartiles at a load average of 6.9 here)."""
    out = []
    for pair in range(start, start + pairs):
        if pair % 2:
            bare = min(bare_loop_ns(forward, calls))
            timed = min(_timings(meter, "compute", forward))
        else:
            timed = min(_timings(meter, "compute", forward))
            bare = min(bare_loop_ns(forward, calls))
        out.append(timed / bare)
    return out


def order_free(ratios: Sequence[float]) -> list[float]:
    """Each two neighbouring pairs' ratios (one where the meter went first, one where the bare loop did) as their
    geometric mean: the first call of a pair runs after the loop's own bookkeeping and is a few percent slower
    (measured: 1.036 against 0.960 on this project's machine), which this cancels."""
    return [math.sqrt(a * b) for a, b in zip(ratios[0::2], ratios[1::2])]


#: Pairs per round of the runtime meter's check, the fewest it judges on, and the most it measures (quick / not).
RUNTIME_ROUND = 20
RUNTIME_PAIRS = {True: (60, 400), False: (200, 1000)}
#: Calls per block of a pair: the block counts as its fastest call.
RUNTIME_BLOCK = 5


def check_runtime_overhead(
    quick: bool = False, backend: Any = None, feeds: dict[str, np.ndarray] | None = None
) -> list[CheckRow]:
    """The runtime meter's cost against a bare loop: on a do-nothing session (its added nanoseconds), and on a real
    one of about 1 ms (``backend``: what the meter synchronizes with, as bench's meter does; ``feeds``: the compute
    session's input), as the median of paired ratios, measured in rounds until its 95% interval lies at or under
    the target (pass) or wholly above it (FAIL), or the pairs run out (FAIL: too noisy to tell)."""
    rows = []
    null = NullSession()
    calls = 2000 if quick else 10_000
    bare = statistics.median(bare_loop_ns(lambda: null({}), calls))
    meter = RuntimeMeter(warmup=10, repeat=calls)
    timed = statistics.median(_timings(meter, "null", lambda: null({})))
    rows.append(
        CheckRow(
            "runtime",
            "meter on a do-nothing session vs bare loop",
            f"{timed:.0f} ns vs {bare:.0f} ns (+{timed - bare:.0f} ns)",
            "<= +1000 ns",
            PASS if timed - bare <= 1000 else FAIL,
        )
    )
    session, feeds = ComputeSession(), compute_feeds() if feeds is None else feeds
    forward = lambda: session(feeds)  # noqa: E731
    call_ms = statistics.median(bare_loop_ns(forward, 9)) / 1e6
    meter = RuntimeMeter(backend, warmup=0, repeat=RUNTIME_BLOCK)
    fewest, most = RUNTIME_PAIRS[quick]
    ratios: list[float] = []
    while True:
        ratios += paired_ratios(forward, meter, RUNTIME_ROUND, start=len(ratios), calls=RUNTIME_BLOCK)
        low, high = median_interval(order_free(ratios))
        if len(ratios) >= fewest and (high <= RUNTIME_RATIO_TARGET or low > RUNTIME_RATIO_TARGET):
            break
        if len(ratios) >= most:
            break
    ok = high <= RUNTIME_RATIO_TARGET
    note = ""
    if not ok and low <= RUNTIME_RATIO_TARGET:
        note = (
            f"undecided after {len(ratios)} pairs: the interval straddles {RUNTIME_RATIO_TARGET}, the timings are "
            "too noisy to validate the meter here: rerun on a quieter machine"
        )
    return rows + [
        CheckRow(
            "runtime",
            f"meter vs bare loop, real session ({call_ms:.2f} ms of numpy compute), paired calls",
            f"median ratio {statistics.median(order_free(ratios)):.3f} (95% CI {low:.3f} .. {high:.3f}, {len(ratios)} pairs)",
            f"CI <= {RUNTIME_RATIO_TARGET}",
            PASS if ok else FAIL,
            note=note,
        )
    ]


def check_memory() -> list[CheckRow]:
    rows = []
    ok, why = hwm_status()
    methods = [("hwm", True)] if ok else []
    if not ok:
        rows.append(
            CheckRow("memory", "exact per-call peak (clear_refs + VmHWM)", "-", "available", UNAVAILABLE, note=why)
        )
    methods.append(("memory_profiler", False))
    for method, decides in methods:
        try:
            meter = MemoryMeter(method=method)
        except MissingExtraError as exc:  # the sampling method is an extra; the exact one decides anyway
            rows.append(
                CheckRow("memory", "memory_profiler (sampling)", "-", "available", UNAVAILABLE, decides, str(exc))
            )
            continue
        label = "exact (clear_refs 5 + VmHWM)" if method == "hwm" else f"memory_profiler, interval {meter.interval} s"
        for mib in MEMORY_SIZES_MIB:
            session = AllocSession(mib)
            sample = meter.measure(f"{mib}MiB", functools.partial(session, {}))
            if not hasattr(sample, "delta_mib"):
                rows.append(CheckRow("memory", f"{label}: {mib} MiB held 5 ms", sample.message, "", FAIL, decides))
                continue
            error = abs(sample.delta_mib - mib) / mib
            rows.append(
                CheckRow(
                    "memory",
                    f"{label}: {mib} MiB held 5 ms",
                    f"delta {sample.delta_mib:.1f} MiB ({error:.1%} off)",
                    f"within {MEMORY_TOLERANCE:.0%}",
                    PASS if error <= MEMORY_TOLERANCE else FAIL,
                    decides,
                    "" if decides else "fairseq's sampling method; shown for comparison, the meter uses the exact one",
                )
            )
    return rows


def check_papi() -> list[CheckRow]:
    status = papi_status()
    if status.available:
        return [CheckRow("papi", "hardware FLOP counters (PAPI_SP_OPS + PAPI_DP_OPS)", "available", "available", PASS)]
    return [
        CheckRow(
            "papi",
            "hardware FLOP counters (PAPI_SP_OPS + PAPI_DP_OPS)",
            "unavailable",
            "available",
            UNAVAILABLE,
            note=status.reason,
        ),
        CheckRow(
            "flops",
            "FLOPs source used here",
            "analytic",
            "-",
            INFO,
            decides=False,
            note="PAPI unavailable (see the papi row); FLOPs are counted from the graph",
        ),
    ]


#: (name, backend or None, why not). The backend is Any: the checks call its optional hooks (known_session,
#: count_flops), after asking has_capability for them (``_lacks``).
CheckedBackend = tuple[str, Any, str]


def _backends(names: Iterable[str] | None) -> list[CheckedBackend]:
    """(name, backend or None, why not) for each backend to check."""
    from speechperf.registry import get_backend, known_backends

    out: list[CheckedBackend] = []
    for name in names or known_backends():
        backend = get_backend(name)  # an unknown name is an input error, raised here
        status = backend.availability()
        out.append((name, backend if status.ok else None, status.reason))
    return out


def _lacks(backend, capabilities: tuple[str, ...]) -> str:
    """Why ``backend`` cannot be checked here: the first of ``capabilities`` it lacks, or "" if it has them all."""
    for capability in capabilities:
        if not hooks(backend).has_capability(capability):
            module = capability_module_name(backend, capability)
            return f"backend {backend.name!r}: capability {capability!r} is unavailable (no module {module})"
    return ""


def check_device_memory(backends: list[CheckedBackend]) -> list[CheckRow]:
    """Per backend with a ``memory`` capability and per device it declares: whether its ``DeviceMemory`` measures
    there, and its ``reason`` when not. Information only: host RSS is measured on every backend anyway."""
    rows = []
    for name, backend, _why in backends:
        if backend is None or not hooks(backend).has_capability("memory"):
            continue
        for device in backend.capabilities.devices:
            what = f"{name}: device allocator peak on {device}"
            try:
                memory = backend.device_memory(device)
                available, reason = bool(memory.available), str(memory.reason)
            except Exception as exc:  # a stub or a broken module: shown, it decides nothing
                available, reason = False, f"{type(exc).__name__}: {exc}"
            status = INFO if available else UNAVAILABLE
            rows.append(
                CheckRow("memory", what, "available" if available else "unavailable", "-", status, False, reason)
            )
    return rows


def check_flops(backends: list[CheckedBackend]) -> list[CheckRow]:
    rows = []
    for name, backend, why in backends:
        for graph in (KnownGraph("matmul"), KnownGraph("conv")):
            what = (
                f"{name}: matmul {graph.m}x{graph.k} @ {graph.k}x{graph.n} = 2*m*n*k"
                if graph.kind == "matmul"
                else f"{name}: conv1d {graph.c_in}->{graph.c_out} k{graph.kernel} on {list(graph.input_shape)}"
            )
            lacking = backend is not None and _lacks(backend, ("known_graph", "flops"))
            if backend is None or lacking:
                rows.append(CheckRow("flops", what, "-", str(graph.expected), UNAVAILABLE, False, lacking or why))
                continue
            try:
                session = backend.known_session(graph)
                feeds = graph.feeds()
                same = np.allclose(session(feeds)[session.output_names[0]], graph.reference(feeds), atol=1e-3)
                count = backend.count_flops(session, feeds)
            except CapabilityUnavailableError as exc:  # a stub capability says so: unavailable, not a failure
                rows.append(CheckRow("flops", what, "-", str(graph.expected), UNAVAILABLE, False, str(exc)))
                continue
            except Exception as exc:
                rows.append(CheckRow("flops", what, f"error: {type(exc).__name__}: {exc}", str(graph.expected), FAIL))
                continue
            ok = same and count.total == graph.expected
            rows.append(
                CheckRow(
                    "flops",
                    what,
                    f"{count.total} ({count.source})",
                    str(graph.expected),
                    PASS if ok else FAIL,
                    note="" if same else "the output differs from numpy's",
                )
            )
    return rows


def check_threads(backends: list[CheckedBackend], quick: bool = False) -> list[CheckRow]:
    from speechperf.threads import cpu_wall_ratio

    rows = []
    graph = KnownGraph("matmul", m=384, n=384, k=384)
    seconds = 0.2 if quick else 0.5
    for name, backend, why in backends:
        lacking = backend is not None and _lacks(backend, ("known_graph",))
        if backend is None or lacking:
            rows.append(
                CheckRow("threads", f"{name}: 1 thread uses one core", "-", "", UNAVAILABLE, False, lacking or why)
            )
            continue
        feeds = graph.feeds()
        for threads in (1, 2):
            if threads == 2 and (os.cpu_count() or 1) < 2:
                continue
            try:
                backend.set_threads(threads)
                session = backend.known_session(graph, threads)
                ratio = cpu_wall_ratio(functools.partial(session, feeds), min_seconds=seconds)
            except CapabilityUnavailableError as exc:
                rows.append(
                    CheckRow("threads", f"{name}: 1 thread uses one core", "-", "", UNAVAILABLE, False, str(exc))
                )
                break
            except Exception as exc:
                rows.append(CheckRow("threads", f"{name}: {threads} thread(s)", f"error: {exc}", "", FAIL))
                continue
            if threads == 1:
                rows.append(
                    CheckRow(
                        "threads",
                        f"{name}: pinned to 1 thread, CPU/wall",
                        f"{ratio:.2f}",
                        f"<= {THREAD_RATIO_TARGET}",
                        PASS if ratio <= THREAD_RATIO_TARGET else FAIL,
                    )
                )
            else:
                rows.append(
                    CheckRow(
                        "threads",
                        f"{name}: 2 threads, CPU/wall",
                        f"{ratio:.2f}",
                        "~2 when idle",
                        INFO,
                        False,
                        "other load on the machine lowers this",
                    )
                )
    return rows


def check_roofline(backends: list[CheckedBackend], threads: Iterable[int]) -> list[CheckRow]:
    from speechperf.meters import roofs

    loaded = [b for _, b, _ in backends if b is not None]
    rows = [CheckRow("roofline", "machine", roofs.machine().describe(), "", INFO, False)]
    for n in threads:
        free = free_cores()
        measured, skipped = roofs.measure(n, loaded)
        free = min(free, free_cores())
        busy = roofs.busy_reason(n, free, psutil.cpu_count() or 1)
        measured = roofs.store(attrs.evolve(measured, busy=busy))
        rows.append(
            CheckRow(
                "roofline",
                f"quiet machine, {n} thread(s)",
                f"{(psutil.cpu_count() or 1) - free:.1f} core(s) busy elsewhere",
                f"<= {roofs.BUSY_CORES}",
                FAIL if busy else PASS,
                note=busy or "the roofs are cached for bench, compare and profile",
            )
        )
        for kind, found, unit in (("fp32 GEMM", measured.compute, "GFLOP/s"), ("int8 GEMM", measured.int8, "GOP/s")):
            for source, roof in sorted(found.items()):
                rows.append(
                    CheckRow(
                        "roofline",
                        f"{kind}, {source}, {n} thread(s)",
                        f"{roof.value:.1f} {unit}",
                        "",
                        INFO,
                        False,
                        roof.how,
                    )
                )
        peak, memory = measured.peak, measured.memory
        rows.append(
            CheckRow(
                "roofline",
                f"compute roof, {n} thread(s)",
                f"{peak.value:.1f} GFLOP/s ({peak.source})" if peak else "-",
                "measured",
                PASS if peak else FAIL,
                note="; ".join(skipped),
            )
        )
        rows.append(
            CheckRow(
                "roofline",
                f"memory roof, {n} thread(s)",
                f"{memory.value:.1f} GB/s" if memory else "-",
                "measured",
                PASS if memory else FAIL,
                note=memory.how if memory else "",
            )
        )
        if measured.ridge:
            rows.append(
                CheckRow("roofline", f"ridge point, {n} thread(s)", f"{measured.ridge:.1f} FLOP/byte", "", INFO, False)
            )
    return rows


def run_checks(
    meters: Iterable[str] = DEFAULT_METERS,
    backends: Iterable[str] | None = None,
    quick: bool = False,
    threads: Iterable[int] = (1,),
) -> CheckReport:
    """Run the checks of the meters named (see METER_NAMES), plus PAPI availability, and return every row."""
    meters = parse_meter_names(list(meters))
    rows: list[CheckRow] = []
    if "runtime" in meters:
        rows += check_timer() + check_runtime_overhead(quick)
    if "memory" in meters:  # before any framework is loaded: memory_profiler forks a sampler
        rows += check_memory()
    rows += [r for r in check_papi() if r.meter == "papi" or "flops" in meters]  # PAPI is always reported
    chosen = _backends(backends) if {"flops", "threads", "memory", "roofline"} & set(meters) else []
    if "memory" in meters:
        rows += check_device_memory(chosen)
    if "flops" in meters:
        rows += check_flops(chosen)
    if "threads" in meters:
        rows += check_threads(chosen, quick)
    if "roofline" in meters:
        rows += check_roofline(chosen, threads)
    return CheckReport(tuple(rows))


def format_report(report: CheckReport, asked: Iterable[str]) -> str:
    """The report as ``speechperf check`` prints it (``speechperf.views.check``, which shows the document)."""
    from speechperf.views.check import report_text

    asked = list(asked)
    return report_text([attrs.asdict(r) for r in report.rows], asked, {m: report.verdict(m) for m in asked})


def to_document(report: CheckReport, asked: Iterable[str], threads: Iterable[int]):
    """The check as a result document of kind ``check`` (docs/results.md): a row per check, the verdict per meter."""
    from speechperf.results import Document
    from speechperf.results.environment import machine

    asked = list(asked)
    return Document(
        "check",
        rows=[attrs.asdict(row) for row in report.rows],
        environment={**machine(), "threads": list(threads)},
        complete=True,
        body={"meters": asked, "verdicts": {meter: report.verdict(meter) for meter in asked}},
    )
