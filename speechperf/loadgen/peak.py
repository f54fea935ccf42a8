"""The Server peak search: a bisection over Server runs for the highest Poisson rate LoadGen calls VALID.

The first trial runs at half the warm-up's capacity estimate (instances / service time); the rate doubles while it
stays VALID and halves while INVALID, then bisects. Each trial is a full LoadGen Server test. The search stops when
the bracket is within 5% or the next trial would overrun the budget (predicted from the longest trial so far).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)
PRECISION = 0.05


def search_peak(
    trial: Callable[[float], object],
    capacity: float,
    budget_s: float,
    runs: list,
    write,
    least_s: Callable[[float], float],
) -> dict:
    """``least_s(qps)``: the shortest a trial at ``qps`` can last (its minimum duration, or its minimum query count
    at that rate), so that a trial that cannot end within the budget is not started."""
    start = time.perf_counter()
    low, high = 0.0, None
    qps = capacity * 0.5
    longest = 0.0
    best = None
    trials = 0
    while True:
        began = time.perf_counter()
        run = trial(qps)
        longest = max(longest, time.perf_counter() - began)
        trials += 1
        runs.append(run)
        write()
        s = run.summary  # type: ignore[attr-defined]
        pct = f"p{run.percentile:g}"  # type: ignore[attr-defined]
        latency = s.percentiles_ms.get(pct)
        log.info(
            "peak search: trial %d: %.3f QPS: %s (%s %s ms)%s",
            trials,
            qps,
            s.result,
            pct,
            f"{latency:.1f}" if latency is not None else "-",
            f"; {'; '.join(s.unmet)}" if s.unmet else "",
        )
        if s.valid:
            low = qps
            best = (qps, latency)
        else:
            high = qps
        elapsed = time.perf_counter() - start
        if high is not None and high - low <= PRECISION * high:
            break
        qps = qps * 2 if high is None else (low + high) / 2 if low else high / 2
        if elapsed + max(longest, least_s(qps)) > budget_s:
            log.info("peak search: budget %.0f s reached after %d trial(s)", budget_s, trials)
            break
    return {
        "peak_qps": best[0] if best else None,
        "peak_latency_ms": best[1] if best else None,
        "trials": trials,
        "seconds": time.perf_counter() - start,
        "budget_s": budget_s,
    }
