"""The summary every step profiler produces, whatever the backend: one op table and the step timing.

Op table: op name, calls, total, avg, max, min, in milliseconds, sorted by ``sorted_key``. Times are host wall
times of each op as the framework recorded them (device kernel times, where a device is used, are in the trace).
Which ops a row stands for is the framework's own notion of an op; each backend says so in ``source``.

Step timing, what ``paddle.profiler``'s timer reports, on every backend and with the same clock
(``time.perf_counter_ns``): batch_cost, the wall time of every recorded step; reader_cost, the part of it spent in
the data loader's ``next()`` (shown when a loader was timed); ips, in samples/s when every step was given
``num_samples``, else in steps/s. Printed as paddle prints its "Perf Summary" (seconds).

The category table (``speechperf.profiler.categories``) follows the op table when the backend split the steps.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

import attrs

from speechperf.profiler.categories import CategoryTable
from speechperf.profiler.options import SORTED_KEYS

UNIT = "ms"
_NS_PER_UNIT = 1e6


@attrs.frozen
class OpStat:
    """One row of the op table. Times in nanoseconds."""

    name: str
    calls: int
    total_ns: int
    max_ns: int
    min_ns: int
    #: FLOPs of all its calls, where the framework's profiler counts them (torch's ``with_flops``); else None.
    flops: int | None = None

    @property
    def avg_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


def aggregate(events: Iterable[tuple]) -> list[OpStat]:
    """Rows from ``(op name, duration in ns)`` or ``(op name, duration in ns, FLOPs)`` tuples, one row per name."""
    acc: dict[str, list[int]] = {}
    flops: dict[str, int] = {}
    for name, dur, *counted in events:
        row = acc.get(name)
        if row is None:
            acc[name] = [1, dur, dur, dur]
        else:
            row[0] += 1
            row[1] += dur
            row[2] = max(row[2], dur)
            row[3] = min(row[3], dur)
        if counted and counted[0]:
            flops[name] = flops.get(name, 0) + int(counted[0])
    return [OpStat(name, c, t, mx, mn, flops.get(name)) for name, (c, t, mx, mn) in acc.items()]


_SORT = {
    "calls": lambda o: o.calls,
    "total": lambda o: o.total_ns,
    "max": lambda o: o.max_ns,
    "min": lambda o: o.min_ns,
    "ave": lambda o: o.avg_ns,
}
assert set(_SORT) == set(SORTED_KEYS)


def sort_ops(ops: Iterable[OpStat], sorted_key: str) -> tuple[OpStat, ...]:
    """Largest first by ``sorted_key``; ties by total time, then name, so the order is stable."""
    return tuple(sorted(ops, key=lambda o: (-_SORT[sorted_key](o), -o.total_ns, o.name)))


@attrs.frozen
class StepTiming:
    """Wall time of each recorded step, and the samples it processed when the loop said so."""

    step_ns: tuple[int, ...] = ()
    samples: tuple[int | None, ...] = ()
    #: Time in the data loader's ``next()`` during each step (0 where no loader was timed).
    reader_ns: tuple[int, ...] = ()

    @property
    def steps(self) -> int:
        return len(self.step_ns)

    @property
    def has_samples(self) -> bool:
        return bool(self.samples) and all(s is not None for s in self.samples)

    @property
    def ips(self) -> float | None:
        """Samples/s when every step had ``num_samples``, else steps/s; None without a timed step."""
        total = sum(self.step_ns)
        if not total:
            return None
        return sum(self.counts) / (total / 1e9)

    @property
    def counts(self) -> tuple[int, ...]:
        """What each step processed, in ``ips_unit``: its samples, or 1 step."""
        return tuple(s for s in self.samples if s is not None) if self.has_samples else (1,) * self.steps

    @property
    def ips_unit(self) -> str:
        return "samples/s" if self.has_samples else "steps/s"

    @property
    def has_reader(self) -> bool:
        return any(self.reader_ns)

    def step_ips(self) -> list[float]:
        """The throughput of each step, in ``ips_unit``."""
        return [c / (t / 1e9) for c, t in zip(self.counts, self.step_ns) if t]

    def perf_summary(self) -> dict[str, dict[str, float]]:
        """paddle's timer summary: reader_cost and batch_cost (s) and ips, each avg / max / min; avg ips is all
        samples over all step time, as paddle computes it."""
        batch = [t / 1e9 for t in self.step_ns]
        rows = {"batch_cost": {"avg": sum(batch) / len(batch), "max": max(batch), "min": min(batch)}}
        if self.has_reader:
            reader = [t / 1e9 for t in self.reader_ns]
            rows = {"reader_cost": {"avg": sum(reader) / len(reader), "max": max(reader), "min": min(reader)}, **rows}
        ips = self.step_ips()
        rows["ips"] = {"avg": sum(self.counts) / sum(batch), "max": max(ips), "min": min(ips)}  # = self.ips
        return rows

    def stats_ms(self) -> dict[str, float]:
        ms = [t / 1e6 for t in self.step_ns]
        return {
            "mean": statistics.fmean(ms),
            "median": statistics.median(ms),
            "min": min(ms),
            "max": max(ms),
        }


@attrs.frozen
class ProfileSummary:
    backend: str
    sorted_key: str
    #: Rows sorted by ``sorted_key``; empty with ``timer_only``.
    ops: tuple[OpStat, ...] = ()
    #: The step numbers the framework's own data shows as recorded.
    steps: tuple[int, ...] = ()
    timing: StepTiming = StepTiming()
    #: A Chrome trace JSON (Perfetto or chrome://tracing opens it); None with ``timer_only``.
    trace_path: Path | None = None
    #: The framework's own output file where it is not the Chrome trace (paddle legacy's protobuf profile).
    raw_path: Path | None = None
    #: What the rows are, in the framework's terms.
    source: str = ""
    notes: tuple[str, ...] = ()
    #: The steps by op category (None with timer_only, or where the backend cannot split a step).
    categories: CategoryTable | None = None
    #: The category table as JSON beside the trace (``speechperf profile-compare`` reads it).
    categories_path: Path | None = None
    #: The machine's compute roof at the profiled thread count (GFLOP/s, what it is), for the ops furthest below
    #: it (speechperf.meters.roofs measures it; the caller that knows the thread count gives it).
    roof: tuple[float, str] | None = None

    def op(self, name: str) -> OpStat | None:
        return next((o for o in self.ops if o.name == name), None)

    def top(self, n: int) -> tuple[OpStat, ...]:
        return self.ops[:n]

    def table(self, limit: int | None = 25):
        from rich.table import Table

        shown = self.ops if limit is None else self.ops[:limit]
        title = f"{self.backend} ops, sorted by {self.sorted_key} ({UNIT})"
        caption = self.source + (
            f"; {len(self.ops) - len(shown)} more rows not shown" if len(shown) < len(self.ops) else ""
        )
        table = Table(title=title, caption=caption)
        table.add_column("op")
        for column in ("calls", f"total {UNIT}", f"avg {UNIT}", f"max {UNIT}", f"min {UNIT}"):
            table.add_column(column, justify="right")
        for o in shown:
            table.add_row(o.name, str(o.calls), *(_fmt(v) for v in (o.total_ns, o.avg_ns, o.max_ns, o.min_ns)))
        return table

    def timing_lines(self) -> list[str]:
        t = self.timing
        if not t.steps:
            return ["step time: no step of batch_range was timed"]
        s = t.stats_ms()
        lines = [
            f"steps timed: {t.steps}",
            f"step time ({UNIT}): mean {s['mean']:.3f}, median {s['median']:.3f}, min {s['min']:.3f}, max {s['max']:.3f}",
            f"ips: {t.ips:.2f} {t.ips_unit}",
            "Perf Summary".center(100, "="),
        ]
        perf = t.perf_summary()
        if t.has_reader:
            lines.append(f"Reader Ratio: {perf['reader_cost']['avg'] / perf['batch_cost']['avg'] * 100:.3f}%")
        lines.append(f"Time Unit: s, IPS Unit: {t.ips_unit}")
        lines.append(_perf_row("", "avg", "max", "min"))
        for item, stats in perf.items():
            lines.append(_perf_row(item, *(f"{stats[k]:.5f}" for k in ("avg", "max", "min"))))
        return lines

    def trace_lines(self) -> list[str]:
        lines = []
        if self.raw_path is not None:
            lines.append(f"{self.backend} profile: {self.raw_path}")
        if self.trace_path is not None:
            lines.append(
                f"trace: {self.trace_path} (open it in Perfetto, https://ui.perfetto.dev, or chrome://tracing)"
            )
        if self.categories_path is not None:
            lines.append(
                f"categories: {self.categories_path} (speechperf profile-compare A B puts two runs side by side)"
            )
        return lines

    def render(self, console=None, limit: int | None = 25) -> None:
        """Print the table (when ops were recorded), the timing and where the trace is."""
        from rich.console import Console

        if console is None:
            console = Console(soft_wrap=False)
            if not console.is_terminal:
                console.width = max(console.width, 140)  # op names are long; a log file has room
        if self.ops:
            console.print(self.table(limit))
            below = below_roof_table(self.ops, self.roof)
            if below is not None:
                console.print(below)
            else:
                why = (
                    "no compute roof is known in this loop (speechperf profile measures one)"
                    if any(o.flops for o in self.ops)
                    else f"the {self.backend} profiler counted no FLOPs per op"
                )
                console.print(
                    f"ops below the roof: {why}; the per-stage roofline is in bench and compare",
                    highlight=False,
                    markup=False,
                )
        if self.categories is not None:
            console.print(self.categories.table())
        for line in [*self.timing_lines(), *self.trace_lines(), *self.notes]:
            console.print(line, highlight=False, markup=False, soft_wrap=True)


def below_roof_table(ops: Iterable[OpStat], roof: tuple[float, str] | None, top: int = 10):
    """The ``top`` ops that lose the most time against the compute ``roof`` (GFLOP/s, what it is): time lost =
    their time minus the time their FLOPs would take at the roof. None when no op has a FLOP count or no roof is
    known."""
    from rich.table import Table

    counted = [(o, o.flops) for o in ops if o.flops and o.total_ns]
    if not counted or roof is None:
        return None
    peak, what = roof  # GFLOP/s = FLOPs per ns

    def lost(item: tuple[OpStat, int]) -> float:
        return item[0].total_ns - item[1] / peak

    table = Table(
        title=f"ops furthest below the roof ({peak:.1f} GFLOP/s, {what})",
        caption="estimate: the profiler's FLOPs per op over its host time; time lost = time - FLOPs / roof",
    )
    table.add_column("op")
    for column in ("calls", f"total {UNIT}", "GFLOP", "GFLOP/s", "% of roof", f"lost {UNIT}"):
        table.add_column(column, justify="right")
    for o, flops in sorted(counted, key=lost, reverse=True)[:top]:
        rate = flops / o.total_ns  # GFLOP/s
        table.add_row(
            o.name,
            str(o.calls),
            _fmt(o.total_ns),
            f"{flops / 1e9:.4f}",
            f"{rate:.1f}",
            f"{100 * rate / peak:.1f}",
            _fmt(lost((o, flops))),
        )
    return table


def _perf_row(*cells: str) -> str:
    return "| " + " | ".join(c.center(15) for c in cells) + " |"


def _fmt(ns: float) -> str:
    return f"{ns / _NS_PER_UNIT:.3f}"
