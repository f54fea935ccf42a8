"""Stage by stage: every candidate of every stage timed on that stage's inputs, screened by successive halving.

A candidate of stage N runs in a fresh ``speechperf bench`` process with stage N pinned to it and the other stages
on the reference path, so its stage is timed on the inputs the reference hands it (bench makes every stage's
inputs before it times any: speechperf.benchmark.core), and its figure is that stage's own mean per-sample time
(or peak RSS for ``--objective memory``). The reference pipeline runs at every rung too, and every fp32 or bf16
candidate's outputs are checked against it with compare's parity rules; an int8 candidate is expected to differ
and is judged end to end against the quality budget instead (speechperf.tune.combine).

Successive halving (Jamieson & Talwalkar 2016): rung 1 runs every candidate on one sample once; each later rung
runs the faster half of each stage's survivors (never fewer than ``KEEP``) on the whole dataset, the last with two
runs for a σ. Candidates are taken round-robin over the stages, so a budget spent early still leaves every stage
measured.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from speechperf.compare.parity import group_parity
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.tune.order import round_robin
from speechperf.tune.runs import Runner, stage_figures
from speechperf.tune.space import Dropped, StageCandidate

log = logging.getLogger(__name__)

#: Survivors of each stage kept at every rung, whatever the halving says.
KEEP = 2


@attrs.frozen
class Rung:
    """``samples`` of the dataset, ``repeat`` timed passes each, ``runs`` fresh processes."""

    samples: int
    repeat: int
    runs: int

    def sets(self) -> tuple[str, ...]:
        return (f"general.dataset_size={self.samples}", f"general.repeat={self.repeat}")


def rungs(dataset_size: int, repeat: int) -> list[Rung]:
    out = [Rung(1, 1, 1), Rung(dataset_size, repeat, 1), Rung(dataset_size, repeat, 2)]
    return [r for i, r in enumerate(out) if r not in out[:i]]


@attrs.define
class Screened:
    """One candidate: its figures at the highest rung it reached, and what became of it."""

    candidate: StageCandidate
    rung: int = 0  # 1-based, 0: never run
    values: list[float] = attrs.Factory(list)  # the objective per run at that rung: seconds, or MiB for memory
    times: list[float] = attrs.Factory(list)  # the stage's mean seconds per sample, per run at that rung
    peak_mib: float | None = None
    size_bytes: int | None = None  # the files the stage loads
    parity: str = "-"
    status: str = "not tried: budget spent"
    # How much longer than the reference's its processes took at that rung (load, compile and run): what it adds to
    # a whole-pipeline process, for the final compare's time estimate.
    extra_wall_s: float | None = None

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def stdev(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) > 1 else None

    @property
    def alive(self) -> bool:
        return self.status in ("kept", "best")


@attrs.define
class Screening:
    rows: dict[str, Screened]
    dropped: list[Dropped]
    reference_wall_s: float | None = None  # one full-dataset process of the reference pipeline
    first_wall_s: float | None = None  # the first rung's reference process: what one screening process takes

    def survivors(self, stage: int) -> list[Screened]:
        alive = [r for r in self.rows.values() if r.candidate.stage == stage and r.alive]
        return sorted(alive, key=lambda r: r.mean if r.mean is not None else math.inf)


@attrs.frozen
class ScreenPlan:
    """What every process of the screening shares: the reference cell's parts, the objective, the tolerances."""

    backend: str  # the reference path's backend (every stage not pinned)
    config: dict[str, Any]
    sets: tuple[str, ...]  # the command line's --set items and the search's own
    objective: str
    tolerances: Mapping[str, Any] | None = None

    def cell(self, label: str, rung: Rung, threads: int, extra: Sequence[str] = ()) -> Cell:
        return Cell(label, self.backend, threads, self.config, None, (*self.sets, *rung.sets(), *extra))


def reference_key(rung_index: int, threads: int) -> str:
    return f"reference t={threads} @rung{rung_index}"


#: ``prepare(candidate, reserve_s, expect_s)``: a pending candidate with its files made (int8), the reason it cannot
#: run (Dropped), or None when what is left after ``reserve_s`` cannot pay for making them and a run of ``expect_s``.
Prepare = Callable[[StageCandidate, float, float], "StageCandidate | Dropped | None"]


def screen(
    candidates: Sequence[StageCandidate],
    dropped: Sequence[Dropped],
    plan: ScreenPlan,
    ladder: Sequence[Rung],
    runner: Runner,
    reserve_s,
    prepare: Prepare | None = None,
    on_first_reference: Callable[[Screening], None] | None = None,
) -> Screening:
    """Successive halving over ``candidates``, each rung in ``order.round_robin``'s order; ``reserve_s(screening)``
    is the time kept for what follows (the end-to-end runs and the final compare). A process is not started when
    what is left is less than the median time of this rung's processes so far (before any, the reference's time at
    this rung): it would be killed before it finished. A pending candidate's files are made (``prepare``) when it
    comes up; ``on_first_reference`` is told once the first rung's reference has run (the pass can be estimated)."""
    found = Screening({c.key: Screened(c) for c in candidates}, list(dropped))
    alive = list(candidates)
    for index, rung in enumerate(ladder, 1):
        last = index == len(ladder)
        results: list[RunResult] = []
        threads = sorted({c.threads for c in alive})
        # An earlier rung's reference, scaled to this rung's samples: a reference that cannot finish is not started
        # (the cascade's rung-3 reference was, with 23 s left, and killed).
        expect = (found.reference_wall_s or 0.0) * rung.samples / ladder[-1].samples
        for n in threads:
            for run in range(rung.runs):
                key = reference_key(index, n)
                got = runner.run(plan.cell(key, rung, n), run, f"{key} run{run}", reserve_s(found), expect)
                if got is not None:
                    results.append(got)
                    if index == 1 and got.ok and got.wall_s and found.first_wall_s is None:
                        found.first_wall_s = got.wall_s
                    if got.ok and got.wall_s and (found.reference_wall_s is None or rung.samples == ladder[-1].samples):
                        # one whole-dataset process; from few samples, scaled up (load time and all: an upper bound)
                        found.reference_wall_s = got.wall_s * ladder[-1].samples / rung.samples
                        runner.typical_wall_s = found.reference_wall_s
        if index == 1 and on_first_reference is not None:
            on_first_reference(found)
        log.info("tune: rung %d of %d: %d candidate(s), %s", index, len(ladder), len(alive), _describe(rung))
        if prepare is not None and runner.jobs > 1:  # made before they go out together
            alive = _prepare_all(found, alive, prepare, reserve_s(found), expect)
        if runner.jobs > 1:  # launched together, --jobs at a time (a Ray cluster spreads them over its nodes)
            items = [
                (plan.cell(f"{c.key} @rung{index}", rung, c.threads, c.sets), run, f"{c.key} @rung{index} run{run}")
                for c in round_robin(alive)
                for run in range(rung.runs)
            ]
            results += [got for got in runner.run_many(items, reserve_s(found)) if got is not None]
        for cand in round_robin(alive) if runner.jobs == 1 else ():
            walls = [r.wall_s for r in results if r.wall_s]
            if cand.pending:
                ready = _prepare(found, cand, prepare, reserve_s(found), statistics.median(walls or [expect]))
                if ready is None:
                    continue  # what is left cannot pay for its files and a run: a cheaper one may still fit
                alive = [ready if c is cand else c for c in alive]
                if isinstance(ready, Dropped):
                    continue
                cand = ready
            for run in range(rung.runs):
                label = f"{cand.key} @rung{index}"
                walls = [r.wall_s for r in results if r.wall_s]
                cell = plan.cell(label, rung, cand.threads, cand.sets)
                got = runner.run(cell, run, f"{label} run{run}", reserve_s(found), statistics.median(walls or [expect]))
                if got is None:
                    break
                results.append(got)
                if got.exit_code == 2:  # refused its input: every later run would be too
                    break
        alive = [c for c in alive if isinstance(c, StageCandidate) and not c.pending]  # never made: not tried
        for cand in alive:
            _judge(found.rows[cand.key], cand, index, rung, results, plan)
        alive = _halve(found, alive, last)
        if not alive or runner.budget.left <= reserve_s(found):
            break
    for row in found.rows.values():
        if row.status == "kept":
            row.status = "best" if row is _best_of_stage(found, row.candidate.stage) else "kept"
    return found


def _describe(rung: Rung) -> str:
    return f"{rung.samples} sample(s) x {rung.repeat} repeat(s), {rung.runs} run(s) each"


def _prepare(found: Screening, cand: StageCandidate, prepare: Prepare | None, reserve: float, expect: float):
    """``cand`` with its files made (its row now names it), Dropped (its row says why), or None (not affordable)."""
    if prepare is None:
        return None
    ready = prepare(cand, reserve, expect)
    row = found.rows[cand.key]
    if isinstance(ready, Dropped):
        row.status = f"dropped: {ready.reason}"
    elif ready is not None:
        row.candidate = ready
    return ready


def _prepare_all(found: Screening, alive, prepare: Prepare, reserve: float, expect: float) -> list:
    out = []
    for cand in round_robin(alive):
        ready = _prepare(found, cand, prepare, reserve, expect) if cand.pending else cand
        if isinstance(ready, StageCandidate):
            out.append(ready)
    return out


def _judge(row: Screened, cand: StageCandidate, index: int, rung: Rung, results, plan: ScreenPlan) -> None:
    label = f"{cand.key} @rung{index}"
    mine = [r for r in results if r.label == label]
    if not mine:
        row.status = "not tried: budget spent" if row.rung == 0 else row.status
        return
    failed = [r for r in mine if not r.ok]
    if failed and len(failed) == len(mine):
        row.rung, row.values = index, []
        row.status = f"failed: {failed[0].reason}"
        return
    figures = [stage_figures(r, cand.stage) for r in mine if r.ok]
    pick = 1 if plan.objective == "memory" else 0
    values = [v for f in figures if (v := f[pick]) is not None]
    row.rung, row.values = index, values
    row.times = [t for t, _ in figures if t is not None]
    ref_walls = [r.wall_s for r in results if r.label == reference_key(index, cand.threads) and r.ok and r.wall_s]
    own_walls = [r.wall_s for r in mine if r.ok and r.wall_s]
    if ref_walls and own_walls:
        row.extra_wall_s = statistics.median(own_walls) - statistics.median(ref_walls)
    peaks = [f[1] for f in figures if f[1] is not None]
    row.peak_mib = statistics.median(peaks) if peaks else None
    if not values:
        row.status = f"failed: stage{cand.stage}'s {'peak RSS' if pick else 'runtime'} missing from its bench JSON"
        return
    if cand.is_int8:
        row.parity = f"{cand.precision.partition(':')[0]}: judged end to end against the quality budget"
        row.status = "kept"
        return
    reference = reference_key(index, cand.threads)
    parity = group_parity([reference, label], results, plan.tolerances).get(label)
    if parity is None:
        row.parity = "not compared (the reference did not finish)"
        row.status = "kept"
        return
    row.parity = parity.describe()
    if parity.mismatch:
        row.status = "dropped: outputs fail parity with the reference (fp32, every stage on its default path)"
    else:
        row.status = "kept"


def _halve(found: Screening, alive: Sequence[StageCandidate], last: bool) -> list[StageCandidate]:
    """Each stage's faster half of the candidates still kept (at least KEEP); the rest are halved out."""
    out = []
    for stage in sorted({c.stage for c in alive}):
        kept = [found.rows[c.key] for c in alive if c.stage == stage and found.rows[c.key].status == "kept"]
        kept.sort(key=lambda r: r.mean if r.mean is not None else math.inf)
        n = len(kept) if last else max(KEEP, math.ceil(len(kept) / 2))
        for row in kept[n:]:
            row.status = f"halved out at rung {row.rung} (slower than the stage's best {n})"
        out += [r.candidate for r in kept[:n]]
    return out


def _best_of_stage(found: Screening, stage: int) -> Screened | None:
    alive = found.survivors(stage)
    return alive[0] if alive else None
