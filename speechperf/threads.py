"""Verify how many cores a backend really uses.

Asking a framework for N threads is not proof that it uses N. The process CPU time over the wall time while a
session runs is: it stays near 1 for one thread and rises towards N for N busy threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def cpu_wall_ratio(work: Callable[[], object], min_seconds: float = 0.5, max_calls: int = 10_000) -> float:
    """Process CPU time divided by wall time over repeated calls of ``work`` lasting at least ``min_seconds``."""
    work()  # the first call may spawn thread pools or compile; leave it out
    cpu0, wall0 = time.process_time(), time.perf_counter()
    calls = 0
    while calls < max_calls:
        work()
        calls += 1
        if time.perf_counter() - wall0 >= min_seconds:
            break
    return (time.process_time() - cpu0) / (time.perf_counter() - wall0)
