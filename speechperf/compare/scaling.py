"""Thread scaling of ``compare --threads 1,2,...``: per backend (and sweep values), the speed-up over its own
1-thread cell and the parallel efficiency, speed-up / threads (1.0 is the ideal line: N threads, N times faster).

The figures are ratios of the cells' means (the mean over runs of each run's mean per-sample runtime), the same
values the ranking divides; a backend without a finished 1-thread cell has none.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs


@attrs.frozen
class Scaling:
    """One cell's scaling against its backend's 1-thread cell."""

    label: str
    backend: str
    threads: int
    speedup: float
    efficiency: float


def scaling(summaries: Sequence) -> dict[str, Scaling]:
    """Label -> Scaling for every finished cell whose backend (at the same sweep values) has a finished 1-thread
    cell; empty when no backend ran at more than one thread count."""
    base = {(s.cell.backend, s.cell.params): s.mean for s in summaries if s.ok and s.cell.threads == 1}
    counts = {(s.cell.backend, s.cell.params, s.cell.threads) for s in summaries}
    if len({c[2] for c in counts}) < 2:
        return {}
    out = {}
    for s in summaries:
        one = base.get((s.cell.backend, s.cell.params))
        if not s.ok or not one or not s.mean:
            continue
        speedup = one / s.mean
        out[s.label] = Scaling(s.label, s.cell.backend, s.cell.threads, speedup, speedup / s.cell.threads)
    return out


def oversubscription_warning(threads: Sequence[int], free: float, cpu_count: int) -> str | None:
    """A warning when the largest thread count asked for exceeds the cores other processes leave free."""
    most = max(threads)
    if most <= free:
        return None
    return (
        f"warning: --threads asks for up to {most} thread(s), but only {free:.1f} of {cpu_count} cores are free "
        "(other processes keep the rest busy, measured as `speechperf check` does): the multi-thread cells "
        "share cores, so their speed-up and efficiency read low"
    )
