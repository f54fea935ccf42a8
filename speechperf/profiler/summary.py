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
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import attrs

from speechperf import tables, views
from speechperf.profiler.categories import CategoryTable
from speechperf.profiler.options import SORTED_KEYS
from speechperf.results import Document

UNIT = "ms"


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

    def to_document(self, **extra: Any) -> Document:
        """The summary as a result document of kind ``profile`` (docs/results.md; ``speechperf.views.profile`` shows
        it): the category table's rows and counts where the steps were split (what ``profile-compare`` reads), the
        op table (times in ns), the step timing with paddle's Perf Summary (reader_cost, batch_cost, ips), the
        trace's path and the notes; ``extra``: what was profiled (the command's own fields)."""
        body: dict[str, Any] = {"backend": self.backend}
        rows: list[dict[str, Any]] = []
        if self.categories is not None:
            table = self.categories
            rows = [{"category": c, "ms_per_step": round(ms, 6), "share": round(sh, 6)} for c, ms, sh in table.rows()]
            body.update(steps=table.steps, step_ns=table.step_ns, by_category=dict(table.by_category))
            body["source"] = table.source
        t = self.timing
        body.update(
            sorted_key=self.sorted_key,
            op_source=self.source,
            ops=[
                {"op": o.name, "calls": o.calls, "total_ns": o.total_ns, "max_ns": o.max_ns, "min_ns": o.min_ns}
                | ({"flops": o.flops} if o.flops is not None else {})
                for o in self.ops
            ],
            recorded_steps=list(self.steps),
            timing={
                "steps": t.steps,
                "step_ns": list(t.step_ns),
                "samples": list(t.samples),
                "reader_ns": list(t.reader_ns),
            },
            step_time_ms=t.stats_ms() if t.steps else None,
            ips=t.ips,
            ips_unit=t.ips_unit,
            perf_summary=t.perf_summary() if t.steps else {},
            trace_path=None if self.trace_path is None else str(self.trace_path),
            raw_path=None if self.raw_path is None else str(self.raw_path),
            categories_path=None if self.categories_path is None else str(self.categories_path),
            roof=None if self.roof is None else list(self.roof),
            summary_notes=list(self.notes),
            **extra,
        )
        return Document("profile", rows=rows, complete=True, body=body)

    def render(self, out: IO[str] | None = None) -> None:
        """Print the op table (when ops were recorded), the step by category, the timing and where the trace is:
        the profile document's console view (``speechperf.views.profile``), as ``speechperf profile`` prints it."""
        out = out or sys.stdout
        doc = self.to_document()
        out.write(views.view_of("profile").console(doc, views.Shown(width=tables.terminal_width(out))))
