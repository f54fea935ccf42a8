"""Verify how many cores a backend really uses.

Asking a framework for N threads is not proof that it uses N. The process CPU time over the wall time while a
session runs is: it stays near 1 for one thread and rises towards N for N busy threads. The reading is only
meaningful for N > 1 when no other process competes for the cores, so the load of other processes during the
measurement is reported beside it.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable

import attrs
import psutil


@attrs.frozen
class ThreadUse:
    #: Process CPU time / wall time while the work ran: the number of cores it kept busy.
    cpu_wall_ratio: float
    #: Cores that other processes kept busy meanwhile; a high value makes a multi-thread reading unreliable.
    other_processes_cores: float


def set_gnu_openmp_threads(n: int) -> bool:
    """Set GNU OpenMP's thread count for the calling thread, where a libgomp is loaded in this process.

    torch and paddle's oneDNN share one libgomp; paddle's own thread setters reach its libiomp5 and MKL, not it.
    Measured on paddlepaddle 3.3.1: once ``torch.set_num_threads(1)`` has run (``import silero_vad`` does it),
    a paddle predictor asked for 2 threads keeps one core busy (cpu/wall 1.00) until this is called (1.43).
    Returns whether a libgomp was there; none is loaded, and none is loaded by this, in a process without them."""
    try:
        gomp = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    gomp.omp_set_num_threads(ctypes.c_int(n))
    return True


def _busy_cpu_seconds() -> float:
    t = psutil.cpu_times()
    return t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


def measure_thread_use(
    work: Callable[[], object], min_seconds: float = 0.5, max_calls: int = 10_000, warmup_seconds: float = 0.3
) -> ThreadUse:
    """Run ``work`` repeatedly for at least ``min_seconds`` and report how many cores it kept busy.

    Calls during the first ``warmup_seconds`` are left out: the first may spawn thread pools or compile, and
    OpenMP workers of earlier parallel work in the process keep spinning for up to ~200 ms after it ends.
    """
    start = time.perf_counter()
    for _ in range(max_calls):
        work()
        if time.perf_counter() - start >= warmup_seconds:
            break
    system0 = _busy_cpu_seconds()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(max_calls):
        work()
        if time.perf_counter() - wall0 >= min_seconds:
            break
    wall = time.perf_counter() - wall0
    own = time.process_time() - cpu0
    others = max(0.0, _busy_cpu_seconds() - system0 - own)
    return ThreadUse(own / wall, others / wall)


def cpu_wall_ratio(work: Callable[[], object], min_seconds: float = 0.5) -> float:
    """Process CPU time divided by wall time over repeated calls of ``work``."""
    return measure_thread_use(work, min_seconds).cpu_wall_ratio


def free_cores(sample_s: float = 0.5) -> float:
    """Cores no other process kept busy over ``sample_s`` seconds, measured as ``speechperf check`` measures the
    other processes' load (psutil's machine-wide CPU times, less this process's own): ``cpu_count`` minus that."""
    system0, own0 = _busy_cpu_seconds(), time.process_time()
    start = time.perf_counter()
    time.sleep(sample_s)
    wall = time.perf_counter() - start
    others = max(0.0, _busy_cpu_seconds() - system0 - (time.process_time() - own0))
    return max(0.0, (psutil.cpu_count() or 1) - others / wall)
