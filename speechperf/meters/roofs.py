"""The machine's roofs, measured: the fp32 (and int8) GEMM peak and the memory bandwidth at a thread count.

A roofline puts a model's achieved FLOP/s under two measured ceilings (docs/architecture.md, "Metrics"):

- **compute**: a square GEMM (``n = 1024``, ``2*n^3`` FLOPs a call) through numpy's BLAS and through each installed
  backend's own matmul (its ``known_session`` over a ``KnownGraph``), at the thread count asked. The roof is the
  best of them: what this machine reached, not a spec sheet's number. int8 where a backend has an int8 GEMM kernel
  (``KnownGraph(dtype="int8")``; onnxruntime's ``MatMulInteger``).
- **memory**: a STREAM-like kernel, ``a = b + c`` over float32 arrays several times the last-level cache (2 reads
  and 1 write per element, counted as 12 bytes as STREAM counts them), split over the threads asked (numpy
  releases the GIL inside the loop).

Each figure is the median of several timed calls after warm-up calls. The roofs are cached per machine (CPU model,
ISA flags, usable cores, the versions of the packages measured) and thread count in ``<cache>/roofs.json``: one
source measured later (a bench that imports only its own framework) is merged into what is there. Roofs measured
while other processes kept cores busy are kept there marked ``busy`` (the plot draws them as such), never in place
of trusted ones and never used for a % of peak. Either kind is measured once and reused until the machine changes
(its ``key``: CPU model, ISA flags, usable cores, the measured packages' versions): ``roofs_for`` measures only
where nothing is cached for this machine and thread count, so a busy machine's roofs are not measured again on
every bench (~10 s of CPU each, under the same load). ``speechperf check --meters roofline`` measures them again,
on a quiet machine, and a trusted result replaces the busy one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import attrs
import numpy as np

logger = logging.getLogger(__name__)


GEMM_N = 1024
WARMUP_CALLS = 2
TIMED_CALLS = 7
MIB = 1 << 20
#: ISA features a roofline reader wants to see beside the roofs (from /proc/cpuinfo's flags).
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")
ROOFS_FILE = "roofs.json"


@attrs.frozen
class Machine:
    cpu: str
    flags: tuple[str, ...]
    cores: int  # usable by this process (its affinity)
    llc_bytes: int | None

    @property
    def key(self) -> str:
        versions = []
        for name in _measured_packages():
            try:
                versions.append(f"{name}={version(name)}")
            except PackageNotFoundError:
                pass
        text = "|".join([self.cpu, ",".join(self.flags), str(self.cores), *versions])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> str:
        llc = f", last-level cache {self.llc_bytes // MIB} MiB" if self.llc_bytes else ""
        return (
            f"{self.cpu}; {self.cores} usable core(s){llc}; ISA: {' '.join(self.flags) or 'none of ' + str(ISA_FLAGS)}"
        )


def _measured_packages() -> list[str]:
    """numpy and every registered backend's framework distribution: a new version may reach another GEMM peak."""
    from speechperf.registry import get_backend, known_backends

    return ["numpy", *sorted({getattr(get_backend(n), "framework_package", "") for n in known_backends()} - {""})]


def machine() -> Machine:
    cpu, flags = "unknown CPU", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and cpu == "unknown CPU":
                cpu = value.strip()
            elif name.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return Machine(cpu, tuple(f for f in ISA_FLAGS if f in flags), cores, _llc_bytes())


def _llc_bytes() -> int | None:
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return max(sizes) if sizes else None


@attrs.frozen
class Roof:
    """One measured ceiling: ``value`` (GFLOP/s or GB/s) and how it was measured."""

    value: float
    source: str  # "numpy", "torch", "onnxruntime", ... or "numpy (a = b + c)"
    how: str


@attrs.frozen
class Roofs:
    threads: int
    compute: dict[str, Roof]  # source -> fp32 GEMM roof
    int8: dict[str, Roof]  # source -> int8 GEMM roof (GOP/s)
    memory: Roof | None
    busy: str | None = None  # why they cannot be trusted (``busy_reason``); None: measured on a quiet machine

    @property
    def trusted(self) -> bool:
        """Both roofs measured on a quiet machine: what a % of peak may be taken of."""
        return self.busy is None and self.peak is not None and self.memory is not None

    @property
    def peak(self) -> Roof | None:
        """The fp32 compute roof: the best GEMM measured here at this thread count."""
        return max(self.compute.values(), key=lambda r: r.value) if self.compute else None

    @property
    def ridge(self) -> float | None:
        """The arithmetic intensity (FLOPs per byte) where the two roofs meet."""
        if self.peak is None or self.memory is None or self.memory.value <= 0:
            return None
        return self.peak.value / self.memory.value


def _median_seconds(call: Callable[[], object], calls: int = TIMED_CALLS) -> float:
    for _ in range(WARMUP_CALLS):
        call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gemm_flops(n: int = GEMM_N) -> int:
    return 2 * n**3


def numpy_gemm(threads: int, n: int = GEMM_N) -> Roof | str:
    """numpy's BLAS sgemm, limited to ``threads`` through threadpoolctl; a string says why it was not measured."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return "threadpoolctl is not installed, so numpy's BLAS threads cannot be limited"
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        seconds = _median_seconds(lambda: a @ b)
    return Roof(gemm_flops(n) / seconds / 1e9, "numpy", f"sgemm {n}^3 through numpy's BLAS, median of {TIMED_CALLS}")


def backend_gemm(backend, threads: int, dtype: str = "float32", n: int = GEMM_N) -> Roof | str:
    """The backend's own matmul over a ``KnownGraph`` of ``n^3``; a string says why it was not measured."""
    from speechperf.backend import CapabilityUnavailableError, hooks
    from speechperf.meters.flops import KnownGraph

    if not hooks(backend).has_capability("known_graph"):
        return f"backend {backend.name!r} has no known-graph capability"
    graph = KnownGraph("matmul", m=n, n=n, k=n, dtype=dtype)
    try:
        backend.set_threads(threads)
        session = backend.known_session(graph, threads)
    except CapabilityUnavailableError as exc:
        return str(exc)
    feeds = graph.feeds()
    seconds = _median_seconds(lambda: session(feeds))
    unit = "int8 GEMM" if dtype == "int8" else "fp32 GEMM"
    return Roof(
        gemm_flops(n) / seconds / 1e9,
        backend.name,
        f"{unit} {n}^3 through {backend.name}'s own matmul, median of {TIMED_CALLS}",
    )


def stream_bytes(llc_bytes: int | None) -> int:
    """Bytes per array: four times the last-level cache, within 256 MiB .. 1 GiB."""
    want = 4 * (llc_bytes or 64 * MIB)
    return int(min(max(want, 256 * MIB), 1024 * MIB))


def memory_bandwidth(threads: int, array_bytes: int) -> Roof:
    n = array_bytes // 4
    b = np.ones(n, dtype=np.float32)
    c = np.full(n, 2.0, dtype=np.float32)
    a = np.empty_like(b)
    a.fill(0)  # touch every page before timing
    bounds = np.linspace(0, n, threads + 1).astype(int)

    def add(lo: int, hi: int) -> None:
        np.add(b[lo:hi], c[lo:hi], out=a[lo:hi])

    def once() -> None:
        if threads == 1:
            add(0, n)
            return
        workers = [threading.Thread(target=add, args=(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    seconds = _median_seconds(once, calls=5)
    return Roof(
        3 * array_bytes / seconds / 1e9,
        "numpy",
        f"a = b + c over 3 float32 arrays of {array_bytes // MIB} MiB in {threads} thread(s) "
        "(2 reads + 1 write = 12 bytes an element, as STREAM counts), median of 5",
    )


def measure(threads: int, backends: Iterable = (), bandwidth: bool = True) -> tuple[Roofs, list[str]]:
    """Roofs at ``threads``, through numpy and ``backends`` (loaded Backend objects); also the reasons for each
    source that could not be measured."""
    compute: dict[str, Roof] = {}
    int8: dict[str, Roof] = {}
    skipped: list[str] = []
    got = numpy_gemm(threads)
    if isinstance(got, Roof):
        compute["numpy"] = got
    else:
        skipped.append(f"numpy fp32 GEMM: {got}")
    for backend in backends:
        for dtype, into in (("float32", compute), ("int8", int8)):
            try:
                got = backend_gemm(backend, threads, dtype)
            except Exception as exc:  # a backend that fails here must not lose the others' roofs
                got = f"{type(exc).__name__}: {exc}"
            if isinstance(got, Roof):
                into[backend.name] = got
            elif dtype == "float32" or "int8" not in got:
                skipped.append(f"{backend.name} {dtype} GEMM: {got}")
    memory = memory_bandwidth(threads, stream_bytes(machine().llc_bytes)) if bandwidth else None
    return Roofs(threads, compute, int8, memory), skipped


#: Cores other processes may keep busy while the roofs are measured: above it, they would be measured low (on a
#: 2-core VM a niced background job halved the GEMM roof and the bandwidth) and must not be cached.
BUSY_CORES = 0.75
BUSY_MARK = "other processes kept"


def busy_reason(threads: int, free: float, cores: int) -> str | None:
    """Why roofs measured at ``threads`` with ``free`` of ``cores`` idle (speechperf.threads.free_cores, the
    lowest reading around the measurement) cannot be trusted; None when the machine was quiet enough."""
    others = cores - free
    if others <= BUSY_CORES or free >= threads + 0.5:
        return None
    return (
        f"{BUSY_MARK} {others:.1f} of {cores} cores busy while the roofs at {threads} thread(s) were "
        "measured: they are low, kept only as untrusted roofs; measure again on a quiet machine "
        "(speechperf check --meters roofline)"
    )


# --- the cache --------------------------------------------------------------------------------------------------


def _cache_path() -> Path:
    from speechperf.cache import cache_dir

    return cache_dir() / ROOFS_FILE


def _roof_from(data: dict) -> Roof:
    return Roof(float(data["value"]), str(data["source"]), str(data["how"]))


def cached(threads: int) -> Roofs | None:
    """The roofs cached for this machine at ``threads``; None when none are (or the file is unreadable)."""
    path = _cache_path()
    try:
        entry = json.loads(path.read_text())[machine().key][str(threads)]
        return Roofs(
            threads,
            {k: _roof_from(v) for k, v in entry.get("compute", {}).items()},
            {k: _roof_from(v) for k, v in entry.get("int8", {}).items()},
            _roof_from(entry["memory"]) if entry.get("memory") else None,
            entry.get("busy"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(roofs: Roofs) -> Roofs:
    """Merge ``roofs`` into the cache (a source measured again replaces its old figure); returns the merged roofs.
    Busy roofs never replace trusted ones, nor are trusted ones merged with busy ones."""
    from speechperf.outputs import write_text_atomic

    path = _cache_path()
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    before = cached(roofs.threads)
    if before is not None and (before.busy is None) != (roofs.busy is None):
        if roofs.busy is not None:
            return before
        before = None
    merged = Roofs(
        roofs.threads,
        {**(before.compute if before else {}), **roofs.compute},
        {**(before.int8 if before else {}), **roofs.int8},
        roofs.memory or (before.memory if before else None),
        roofs.busy,
    )
    entry = {
        "compute": {k: attrs.asdict(v) for k, v in merged.compute.items()},
        "int8": {k: attrs.asdict(v) for k, v in merged.int8.items()},
        "memory": attrs.asdict(merged.memory) if merged.memory else None,
        "machine": attrs.asdict(machine()),
        **({"busy": merged.busy} if merged.busy else {}),
    }
    data.setdefault(machine().key, {})[str(roofs.threads)] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2) + "\n", "the roofs cache")
    return merged


#: Set in a compare's children to the key of the machine whose roofs the compare measured (``measured_once``).
MEASURED_ENV = "SPEECHPERF_ROOFS_MEASURED"


def roofs_for(threads: int) -> Roofs | None:
    """The trusted roofs at ``threads``, measuring them once in a child process when none are cached for this machine
    (the child imports every installed framework, which must not happen in a measuring process); None if that fails
    or the machine was busy. Roofs cached as untrusted (busy) are reused as such, not measured again: until the
    machine changes, only ``speechperf check --meters roofline`` measures them again. In a compare's child no roofs
    are measured: its parent did, once (``measured_once``)."""
    found = cached(threads)
    if found is not None:
        return found if found.trusted else None
    if os.environ.get(MEASURED_ENV) == machine().key:
        return None
    measure_in_child(threads)
    found = cached(threads)
    return found if found is not None and found.trusted else None


@contextlib.contextmanager
def measured_once(thread_counts: Iterable[int]) -> Iterator[None]:
    """Measure the roofs at each of ``thread_counts`` where none are cached, before a compare's children run, and
    keep the children from measuring them again: a measurement that failed caches nothing, so otherwise every child
    measured them again."""
    for n in sorted(set(thread_counts)):
        roofs_for(n)
    before = os.environ.get(MEASURED_ENV)
    os.environ[MEASURED_ENV] = machine().key
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(MEASURED_ENV, None)
        else:
            os.environ[MEASURED_ENV] = before


def measure_in_child(threads: int) -> None:
    """``speechperf check --meters roofline`` at ``threads`` in a child process, which caches what it measures."""
    import subprocess
    import sys

    logger.info("measuring the machine's roofs at %d thread(s) once (speechperf check --roofline) ...", threads)
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "speechperf", "check", "--meters", "roofline", "--threads", str(threads)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:  # the roofline columns go without; nothing measured is lost
        logger.warning("could not measure the roofs: %s; the roofline columns show no %% of peak", exc)
        return
    if done.returncode != 0:  # a busy machine is said in check's notes (stdout); anything else on stderr
        busy = [line.split(": ", 1)[-1] for line in done.stdout.splitlines() if BUSY_MARK in line]
        reason = busy[0] if busy else (done.stderr.strip().splitlines() or ["?"])[-1]
        logger.warning("could not measure the roofs: %s; the roofline columns show no %% of peak", reason)
        return
    logger.info("measured and cached the roofs in %.1f s (%s)", time.perf_counter() - start, _cache_path())
