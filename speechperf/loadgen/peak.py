"""The Server peak search: the highest Poisson rate LoadGen calls VALID, over full LoadGen Server tests (trials).

Each trial's outcome decides the next (``Search.record``, a pure function of the outcomes, tested on fixed ones):

- VALID: the rate is a lower bound; raise it (double until a trial misses the bound, then bisect).
- the latency bound missed (LoadGen's "Performance constraints satisfied: NO"): lower the rate.
- too few queries (early stopping, min queries or min duration not met, the bound itself met): the rate is not
  judged yet; run it again, longer: early stopping's own count of the queries it needs (x 1.1).
- the fastest query alone takes longer than the bound: no rate can pass; stop with one line that says so.

The search ends when the bracket is within 5% (converged), or when the next trial (its minimum duration or query
count at its rate, times how much longer than that the last trial took) would overrun the budget. The best VALID
trial is the one of the highest scheduled rate; its figure is MLPerf's: LoadGen's completed samples per second (what
the current submission checker reads), with its scheduled rate and target rate beside it. A search that did not
converge gives a bound, and says so: its bracket (the highest VALID target rate, the lowest that missed the bound,
or none) is where the peak lies, and ``speechperf diff`` of two peaks reads it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

import attrs

from speechperf.tables import significant

log = logging.getLogger(__name__)
PRECISION = 0.05
MORE_QUERIES = 1.1  # margin on early stopping's count: it assumes every further query meets the bound


@attrs.frozen
class Step:
    """What to do next: run at ``qps`` with at least ``queries`` queries, or stop (``stop``: the line why)."""

    qps: float = 0.0
    queries: int = 1
    stop: str | None = None


@attrs.define
class Search:
    """The search's state: the bracket so far and the best VALID trial."""

    bound_ms: float
    queries: int  # the minimum query count of the next trial (raised when a trial had too few)
    low: float = 0.0  # the highest VALID target rate
    high: float | None = None  # the lowest rate that missed the bound
    best: int | None = None  # the index of the best VALID trial (the highest scheduled rate)
    best_qps: float = 0.0

    def record(self, index: int, qps: float, summary: Any) -> Step:
        """The next step after trial ``index`` ran at ``qps`` and LoadGen summarised it as ``summary``."""
        fastest = summary.min_latency_ms
        if not summary.valid and fastest is not None and fastest > self.bound_ms:
            return Step(stop=one_query_line(fastest / 1000, self.bound_ms))
        if summary.valid:
            self.low = max(self.low, qps)
            scheduled = summary.scheduled_qps if summary.scheduled_qps is not None else qps
            if self.best is None or scheduled > self.best_qps:
                self.best, self.best_qps = index, scheduled
        elif summary.too_few_queries:
            processed, more = summary.queries_needed or (self.queries, self.queries)
            self.queries = max(self.queries + 1, math.ceil((processed + more) * MORE_QUERIES))
            return Step(qps, self.queries)
        else:  # the bound missed (or LoadGen said INVALID for a reason of its own): lower the rate
            self.high = qps if self.high is None else min(self.high, qps)
        if self.high is not None and self.high - self.low <= PRECISION * self.high:
            return Step(stop=f"bracketed within {PRECISION:.0%}: {significant(self.low)} to {significant(self.high)}")
        if self.high is None:
            return Step(qps * 2, self.queries)
        return Step((self.low + self.high) / 2 if self.low else self.high / 2, self.queries)

    @property
    def converged(self) -> bool:
        """The bracket closed within ``PRECISION``: the peak is known to 5%, not only bounded."""
        return self.best is not None and self.high is not None and self.high - self.low <= PRECISION * self.high

    @property
    def lower_bound(self) -> bool:
        """No trial above the best VALID rate missed the bound: the rate the SUT serves may be higher."""
        return self.best is not None and self.high is None


def one_query_line(seconds: float, bound_ms: float) -> str:
    return f"no rate can pass: one query takes {significant(seconds)} s, bound {bound_ms:g} ms"


def search_peak(
    trial: Callable[[float, int], Any],
    capacity: float,
    budget_s: float,
    runs: list,
    write: Callable[[], None],
    least_s: Callable[[float, int], float],
    *,
    bound_ms: float,
    queries: int,
    fastest_s: float | None = None,
    start_qps: float | None = None,
) -> dict[str, Any]:
    """Run trials (``trial(qps, min_queries)`` -> a LoadgenRun) until ``Search`` stops or the budget would be
    overrun. ``least_s(qps, queries)``: the shortest a trial can last, so that one that cannot end within the
    budget is not started. ``fastest_s``: the warm-up's fastest sample; above the bound, no trial is run.
    ``start_qps``: the first trial's rate (default: half of ``capacity``)."""
    start = time.perf_counter()
    search = Search(bound_ms=bound_ms, queries=queries)
    step = Step(start_qps or capacity * 0.5, queries)
    if fastest_s is not None and fastest_s * 1000 > bound_ms:
        step = Step(stop=one_query_line(fastest_s, bound_ms) + " (the warm-up's fastest sample)")
    overrun = 1.0  # how much longer than its least the last trial took (queueing, LoadGen's drain)
    while step.stop is None:
        elapsed = time.perf_counter() - start
        need = least_s(step.qps, step.queries) * overrun
        if elapsed + need > budget_s:
            step = Step(
                stop=f"the next trial ({significant(step.qps)} QPS, {step.queries} queries, about {need:.0f} s) "
                f"would overrun the budget ({elapsed:.0f} s spent of {budget_s:g} s)"
            )
            break
        began = time.perf_counter()
        run = trial(step.qps, step.queries)
        overrun = max(1.0, (time.perf_counter() - began) / max(least_s(step.qps, step.queries), 1e-9))
        runs.append(run)
        write()
        s = run.summary
        pct = f"p{run.percentile:g}"
        latency = s.percentiles_ms.get(pct)
        log.info(
            "peak search: trial %d: %s QPS, min queries %d: %s (%s %s ms)%s",
            len(runs),
            significant(step.qps),
            step.queries,
            s.result,
            pct,
            f"{latency:.1f}" if latency is not None else "-",
            f"; {'; '.join(s.unmet)}" if s.unmet else "",
        )
        step = search.record(len(runs) - 1, step.qps, s)
    log.info("peak search: %s", step.stop)
    best = runs[search.best] if search.best is not None else None
    return {
        "peak_qps": search.best_qps if best is not None else None,
        "target_qps": best.target_qps if best is not None else None,
        "peak_trial": search.best + 1 if search.best is not None else None,
        "peak_latency_ms": best.summary.percentiles_ms.get(f"p{best.percentile:g}") if best is not None else None,
        "completed_qps": best.summary.completed_qps if best is not None else None,  # MLPerf's Server figure
        "lower_bound": search.lower_bound,
        "converged": search.converged,
        # where the peak lies, in target rates: the highest VALID, the lowest that missed the bound (None: none did)
        "bracket": [search.low if best is not None else None, search.high],
        "stopped": step.stop,
        "trials": len(runs),
        "seconds": time.perf_counter() - start,
        "budget_s": budget_s,
    }
