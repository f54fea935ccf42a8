"""``speechperf tune --objective server``: the most requests a second this machine serves within a latency bound.

After the latency tune's phases (the screening, the pipelines run whole and judged against the quality budget), the
winning pipeline is served under the system under test's levers (``general.serving: stages``,
speechperf.loadgen.stages): per stage, a pool of instances at a thread count and dynamic batching. Each serving
configuration is one ``speechperf loadgen --scenario Server --find-peak`` child (speechperf.compare.serving's), judged
by MLPerf's Server figure: LoadGen's completed samples/s of the best VALID trial at the bound
(``--latency p99=500ms``). The configurations are screened with short peak searches, the finalists searched again
for longer, and the best written as a config ``speechperf loadgen`` runs unchanged. A final interleaved series of
peak searches sets it against each backend's best single-framework pipeline, and the latency winner, with default
scheduling (one chain, one instance): "N ± σ times the samples/s", with Welch's p over the repeated searches.

Quality: the pipeline is the latency tune's, judged there; batching must not change an output (each child checks
its batching stages against batch 1 at warm-up and refuses the run otherwise), and instances or queues change none.
"""

from __future__ import annotations

import json
import logging
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import SpeechperfError
from speechperf.loadgen.stages import StageServing

log = logging.getLogger(__name__)

#: the largest latency bound taken (LoadGen holds it in nanoseconds, as a 64-bit integer)
MAX_BOUND_MS = 3_600_000.0
#: MLPerf's Server constraint for its speech task (RNN-T): p99 within 1000 ms.
DEFAULT_LATENCY = (99.0, 1000.0)
#: Shares of --budget: the latency tune's phases, then of what is left the screening of serving configurations and
#: the finalists' longer searches; the rest is the final compare's.
LATENCY_SHARE = 0.3
SCREEN_SHARE = 0.3
CONFIRM_SHARE = 0.15
FINALISTS = 2
#: dynamic batching's settings searched: batches of up to MAX_BATCH, waiting at most QUEUE_DELAY_MS to fill
MAX_BATCH = 4
QUEUE_DELAY_MS = 10.0
#: LoadGen's minimum duration of each trial: the screening's and the finalists' (MLPerf's is 600 s: `speechperf
#: loadgen --config <serving.yaml> --scenario Server --find-peak` runs it so)
SCREEN_DURATION_S = 5.0
CONFIRM_DURATION_S = 10.0
#: a later search of a configuration starts this far below the rate its best trial was asked for
START_BELOW = 0.8
#: the least a child's peak search is given (a few trials), and what it takes to start and warm up, at the least
MIN_SEARCH_S = 30.0
MIN_START_S = 20.0
SERVING_CONFIG = "serving.yaml"


def parse_latency(text: str | None) -> tuple[float, float]:
    """``p99=500ms`` -> (99.0, 500.0): the percentile and its bound in ms (``s`` also read); None: MLPerf's."""
    if text is None:
        return DEFAULT_LATENCY
    found = re.fullmatch(r"\s*p(\d+(?:\.\d+)?)\s*=\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*", text)
    percentile = float(found.group(1)) if found else None
    bound = float(found.group(2)) * (1000.0 if found.group(3) == "s" else 1.0) if found else 0.0
    if found is None or percentile is None or not 50 <= percentile < 100 or not 0 < bound <= MAX_BOUND_MS:
        raise SpeechperfError(
            f"--latency {text}: allowed: pNN=BOUND, a percentile from 50 to under 100 and a bound > 0 and at most "
            "an hour, in ms or s (e.g. p99=500ms, p90=1.5s)"
        )
    return percentile, bound


@attrs.frozen
class ServingCandidate:
    """One way to serve the pipeline: each stage's pool and batching (``general.serving: stages``)."""

    threads: int
    stages: tuple[StageServing, ...]

    @property
    def name(self) -> str:
        """``t=1 s1:2x b4 s2:1x``: each stage's instances and its batch bound (t: every instance's threads)."""
        parts = [f"s{n}:{s.instances}x" + (f" b{s.max_batch}" if s.max_batch > 1 else "") for n, s in
                 enumerate(self.stages, 1)]  # fmt: skip
        return f"t={self.threads} " + " ".join(parts)

    @property
    def sets(self) -> tuple[str, ...]:
        """The --set items that make the pipeline's config serve this way."""
        out = ["general.serving=stages", f"general.threads={self.threads}"]
        for n, s in enumerate(self.stages, 1):
            out += [f"stage{n}.instances={s.instances}", f"stage{n}.stage_threads={s.threads}"]
            out += [f"stage{n}.max_batch={s.max_batch}", f"stage{n}.max_queue_delay_ms={s.max_queue_delay_ms:g}"]
        return tuple(out)


def candidates(
    threads: Sequence[int], stage_ms: Sequence[float | None], batches: Sequence[bool], cores: int
) -> list[ServingCandidate]:
    """The configurations searched, within ``cores``: at each thread count, the slowest stage's pool (``stage_ms``:
    each stage's mean time in the screening) one instance or as wide as the cores allow, every stage as wide
    (a replicated chain, for a cascade), each without and with dynamic batching on the stages that batch
    (``batches``). One instance, no batching, is the first: the staged pipeline's own baseline."""
    count = len(stage_ms)
    slowest = max(range(count), key=lambda i: stage_ms[i] or 0.0)
    found: list[ServingCandidate] = []
    for t in sorted({t for t in threads if t <= cores}):
        widths = sorted({1, max(1, cores // t)})
        shapes = [[w if i == slowest else 1 for i in range(count)] for w in widths]
        if count > 1 and widths[-1] > 1:
            shapes.append([widths[-1]] * count)
        for shape in shapes:
            for batch in (1, MAX_BATCH) if any(batches) else (1,):
                stages = tuple(
                    StageServing(
                        shape[i],
                        t,
                        batch if batches[i] else 1,
                        QUEUE_DELAY_MS if batch > 1 and batches[i] else 0.0,
                    )
                    for i in range(count)
                )
                cand = ServingCandidate(t, stages)
                if cand not in found:
                    found.append(cand)
    return found


def write_serving_config(pipeline_config: Path, cand: ServingCandidate, path: Path) -> Path:
    """The pipeline's config (a file tune wrote) served as ``cand`` says, written to ``path``: a config that
    ``speechperf loadgen`` runs unchanged."""
    import yaml

    from speechperf.config import write_config
    from speechperf.config.load import apply_sets

    data = yaml.safe_load(Path(pipeline_config).read_text())
    apply_sets(data, list(cand.sets))
    return write_config(data, path)


@attrs.define
class Measured:
    """One child's peak search of one configuration (or one final-compare cell)."""

    name: str
    completed_qps: float | None  # MLPerf's Server figure: completed samples/s of the best VALID trial
    latency_ms: float | None  # the percentile at that trial
    result: str  # VALID, NO VALID RATE, FAILED, ...
    target_qps: float | None = None  # the rate that trial was asked for: where a later search of it starts
    queries: int | None = None  # the fewest samples a VALID trial of the search served (early stopping's need)
    lower_bound: bool = False
    stopped: str | None = None
    json_path: str = ""
    wall_s: float = 0.0
    search_s: float = 0.0  # the peak search's own seconds (the rest: starting, loading, warming up)
    reason: str | None = None
    phase: str = "screen"


def figure(json_path: str) -> dict[str, Any]:
    """The peak of a child's loadgen document (``peak``: completed_qps, peak_latency_ms, ...) or {}."""
    try:
        data = json.loads(Path(json_path).read_text())
    except (OSError, ValueError):
        return {}
    peak = data.get("peak")
    return peak if isinstance(peak, dict) else {}


def stats_line(winner: str, mine: Sequence[float], other: str, theirs: Sequence[float]) -> dict[str, Any]:
    """``winner`` against ``other`` over repeated peak searches: the ratio of mean completed samples/s ± σ and
    Welch's p (speechperf.stats)."""
    from speechperf import stats

    if not mine or not theirs or min(theirs) <= 0:
        return {"other": other, "ratio": None, "sigma": None, "p_value": None,
                "sentence": f"{winner} against {other}: not compared (a side has no VALID peak in every run)"}  # fmt: skip
    ratio = stats.speed_ratio(theirs, mine)  # rates: the winner's over theirs
    p = stats.welch_p_value(mine, theirs)
    tail = " (no significance test: fewer than 2 runs on a side)" if p is None else f" ({stats.p_text(p)})"
    if p is not None and p >= stats.SIGNIFICANCE:
        tail = f" (not significant, {stats.p_text(p)})"
    return {
        "other": other,
        "ratio": ratio.value,
        "sigma": ratio.sigma,
        "p_value": p,
        "winner_mean": statistics.fmean(mine),
        "other_mean": statistics.fmean(theirs),
        "sentence": f"{winner} served {ratio.text()} times the completed samples/s of {other}{tail}",
    }


@attrs.define
class ServingTune:
    """The serving phases' state: what each child measured, the finalists, the winner and the final compare."""

    percentile: float
    bound_ms: float
    out_dir: Path
    deadline: Any  # speechperf.tune.runs.Budget: the whole tune's --budget
    rounds: int = 3
    timeout_s: float | None = None
    measured: list[Measured] = attrs.Factory(list)
    left_out: list[str] = attrs.Factory(list)
    finalists: list[str] = attrs.Factory(list)
    winner: ServingCandidate | None = None
    winner_qps: float | None = None
    winner_config: Path | None = None
    final: dict[str, Any] | None = None
    start_s: float = MIN_START_S  # a child's time to start, load and warm up, once one ran
    winner_rate: float | None = None  # the rate the winner's best trial was asked for
    _ledger: dict[str, dict] = attrs.Factory(dict)

    def __attrs_post_init__(self) -> None:
        path = self._ledger_path
        if path.is_file():
            for line in path.read_text().splitlines():
                with_key = json.loads(line)
                self._ledger[with_key.pop("key")] = with_key

    @property
    def _ledger_path(self) -> Path:
        return self.out_dir / "state" / "serving.jsonl"

    def options(self, duration_s: float, search_s: float, start_qps: float | None = None, queries: int | None = None):
        from speechperf.compare.serving import ServingOptions

        return ServingOptions(
            scenario="Server",
            target_latency_ms=self.bound_ms,
            percentile=self.percentile,
            duration_s=duration_s,
            budget_s=round(search_s, 1),
            start_qps=round(start_qps, 3) if start_qps else None,
            min_queries=queries,
            mlperf_percentile=DEFAULT_LATENCY[0],
        )

    def peak(
        self, cell, duration_s: float, search_s: float, phase: str, write, known: float | None = None, queries=None
    ) -> Measured:
        """One child's peak search of ``cell`` (a compare Cell), or the one an earlier run of this tune measured;
        ``known``: the rate an earlier search's best trial was asked for (this one starts a little below it);
        ``queries``: its trials' least query count (None: LoadGen's least, raised by the search as it needs)."""
        from speechperf.compare.serving import child_command, row_of, run_dir_of
        from speechperf.launch.child import run_child
        from speechperf.tune.runs import state_digest

        opts = self.options(duration_s, search_s, known * START_BELOW if known else None, queries)
        workdir = self.out_dir / "serving" / phase
        config = cell.config if not isinstance(cell.config, Path) else Path(cell.config).read_text()
        key = state_digest(
            cell.backend, cell.threads, config, cell.sets, attrs.evolve(opts, budget_s=0, start_qps=None), phase
        )
        if key in self._ledger:
            found = Measured(**self._ledger[key])
            log.info("tune: serving: %s (%s): reused: %s", found.name, phase, _shown(found))
            self.measured.append(found)
            return found
        cell.write_config(workdir)
        timeout = self.timeout_s or search_s + 10 * self.start_s + 120
        log.info("tune: serving: %s (%s): a peak search of %.0f s, trials of at least %g s", cell.label, phase,
                 search_s, duration_s)  # fmt: skip
        result = run_child(child_command(cell, opts, workdir), run_dir_of(workdir, cell), cell.label, 0, timeout)
        row = row_of(cell, opts, result)
        peak = figure(result.json_path)
        valid = row.result == "VALID"
        found = Measured(
            name=cell.label,
            completed_qps=peak.get("completed_qps") if valid else None,
            latency_ms=peak.get("peak_latency_ms") if valid else None,
            target_qps=peak.get("target_qps") if valid else None,
            queries=_least_valid_samples(result.json_path) if valid else None,
            result=row.result,
            lower_bound=row.lower_bound,
            stopped=row.stopped,
            json_path=result.json_path,
            wall_s=round(result.wall_s or 0.0, 1),
            search_s=round(float(peak.get("seconds") or 0.0), 1),
            reason=None if result.ok else f"{result.reason} (exit code {result.exit_code}; {result.stderr_path})",
            phase=phase,
        )
        if found.search_s and found.wall_s > found.search_s:
            self.start_s = max(MIN_START_S, found.wall_s - found.search_s)
        self.measured.append(found)
        self._ledger[key] = attrs.asdict(found)
        self._ledger_path.parent.mkdir(parents=True, exist_ok=True)
        with self._ledger_path.open("a") as ledger:
            ledger.write(json.dumps({"key": key, **attrs.asdict(found)}) + "\n")
        log.info("tune: serving: %s (%s): %s", found.name, phase, _shown(found))
        write()
        return found

    def search(self, base, cands: Sequence[ServingCandidate], write) -> None:
        """Screen ``cands`` (short searches of the pipeline's config ``base``, a Cell, with each one's sets), then
        search the finalists again, longer; the winner is the finalist of the highest completed samples/s."""
        left = self.deadline.left
        per = (left * SCREEN_SHARE) / max(1, len(cands))
        fit = max(1, int(left * SCREEN_SHARE // (MIN_SEARCH_S + self.start_s)))
        for cand in cands[fit:]:
            self.left_out.append(f"{cand.name}: not screened: {len(cands)} configurations need more than the "
                                 f"{left * SCREEN_SHARE:.0f} s the screening has")  # fmt: skip
        screened = []
        for cand in cands[:fit]:
            search_s = max(MIN_SEARCH_S, per - self.start_s)
            if self.deadline.left < search_s + self.start_s:
                self.left_out.append(f"{cand.name}: not screened: {self.deadline.left:.0f} s of --budget left")
                continue
            cell = attrs.evolve(base, label=cand.name, threads=cand.threads, sets=(*base.sets, *cand.sets))
            screened.append((cand, cell, self.peak(cell, SCREEN_DURATION_S, search_s, "screen", write)))
        ranked = sorted((s for s in screened if s[2].completed_qps), key=lambda s: -(s[2].completed_qps or 0.0))
        finalists = ranked[:FINALISTS]
        self.finalists = [cand.name for cand, _, _ in finalists]
        budget = left * CONFIRM_SHARE / max(1, len(finalists))
        best: tuple[float, ServingCandidate] | None = None
        for cand, cell, screen in finalists:
            figure_qps = screen.completed_qps or 0.0
            search_s = max(MIN_SEARCH_S, budget - self.start_s)
            if self.deadline.left > search_s + self.start_s:
                confirmed = self.peak(cell, CONFIRM_DURATION_S, search_s, "confirm", write, screen.target_qps)
                figure_qps = confirmed.completed_qps or 0.0
            if best is None or figure_qps > best[0]:
                best = (figure_qps, cand)
        if best is not None and best[0] > 0:
            self.winner_qps, self.winner = best
            self.winner_rate = max((m.target_qps or 0.0 for m in self.measured if m.name == best[1].name), default=None)

    def compare(self, cells: list, write, known: float | None = None) -> None:
        """Interleaved rounds of peak searches: ``cells[0]`` the winner's config, the others with default
        scheduling; each of the others against the winner, in completed samples/s. ``known``: the winner's rate
        (each search starts below the rate the cell's last search found)."""
        confirm = [m for m in self.measured if m.phase == "confirm"] or self.measured
        search_s = max([m.search_s for m in confirm] + [MIN_SEARCH_S])
        child_s = search_s + self.start_s
        rounds = min(self.rounds, int(self.deadline.left // (child_s * len(cells))))
        while rounds < 2 and len(cells) > 2:
            dropped = cells.pop()
            self.left_out.append(f"final compare: {dropped.label} left out: 2 rounds of {len(cells) + 1} cells need "
                                 f"about {2 * child_s * (len(cells) + 1):.0f} s, {self.deadline.left:.0f} s are left")  # fmt: skip
            rounds = min(self.rounds, int(self.deadline.left // (child_s * len(cells))))
        if rounds < 2:
            self.final = {"skipped": f"final compare not run: 2 rounds of {len(cells)} peak searches need about "
                                     f"{2 * child_s * len(cells):.0f} s, {self.deadline.left:.0f} s are left"}  # fmt: skip
            log.warning("tune: serving: %s", self.final["skipped"])
            return
        figures: dict[str, list[float]] = {c.label: [] for c in cells}
        results: dict[str, list[str]] = {c.label: [] for c in cells}
        rates: dict[str, float | None] = {c.label: None for c in cells}
        rates[cells[0].label] = known
        # every search starts at the query count early stopping needed at the bound (a first trial of fewer is
        # "too few queries" and only spends the budget: a slow cell's search then ended with no VALID trial)
        queries = min((m.queries for m in self.measured if m.completed_qps and m.queries), default=None)
        for r in range(rounds):
            for cell in cells[r % len(cells) :] + cells[: r % len(cells)]:  # each round begins one cell later
                got = self.peak(cell, CONFIRM_DURATION_S, search_s, f"final-{r + 1}", write, rates[cell.label], queries)
                rates[cell.label] = got.target_qps or rates[cell.label]
                results[cell.label].append(got.result)
                if got.completed_qps:
                    figures[cell.label].append(got.completed_qps)
        winner = cells[0].label
        self.final = {
            "rounds": rounds,
            "cells": [c.label for c in cells],
            "completed_qps": figures,
            "results": results,
            "comparisons": [
                stats_line(winner, figures[winner], c.label, figures[c.label])
                if len(figures[c.label]) == rounds and len(figures[winner]) == rounds
                else stats_line(winner, [], c.label, [])
                for c in cells[1:]
            ],
        }

    def front(self) -> list[str]:
        """The configurations no other beats on both completed samples/s and the latency at the peak (a confirmed
        configuration by its longer search)."""
        latest = {m.name: m for m in self.measured if not m.phase.startswith("final")}  # confirmed over screened
        points = [(m.name, m.completed_qps, m.latency_ms) for m in latest.values() if m.completed_qps and m.latency_ms]
        return [
            name
            for name, qps, ms in points
            if not any(q >= qps and lat <= ms and (q, lat) != (qps, ms) for _, q, lat in points)
        ]

    def lines(self) -> list[str]:
        """The serving answer, as the console prints it under the tune's."""
        out = [f"serving: MLPerf Server at p{self.percentile:g} <= {self.bound_ms:g} ms: {len(self.measured)} peak "
               f"search(es); figures are LoadGen's completed samples/s of the best VALID trial"]  # fmt: skip
        if self.winner is None:
            out.append("serving: no configuration reached a VALID rate")
        else:
            out.append(
                f"serving: winner {self.winner.name}: {self.winner_qps:.3g} completed samples/s; its config: "
                f"{self.winner_config} (speechperf loadgen --config {self.winner_config} --scenario Server "
                f"--find-peak --duration {CONFIRM_DURATION_S:g} --target-latency-ms {self.bound_ms:g} "
                f"--percentile {self.percentile:g})"
            )
        out += [f"serving: {line}" for line in self.left_out]
        if self.final:
            out += [f"serving: {c['sentence']}" for c in self.final.get("comparisons") or ()]
            if self.final.get("skipped"):
                out.append(f"serving: {self.final['skipped']}")
        return out

    def body(self) -> dict[str, Any]:
        return {
            "latency": {"percentile": self.percentile, "bound_ms": self.bound_ms},
            "measured": [attrs.asdict(m) for m in self.measured],
            "finalists": self.finalists,
            "winner": None
            if self.winner is None
            else {
                "name": self.winner.name,
                "completed_qps": self.winner_qps,
                "sets": list(self.winner.sets),
                "stages": [attrs.asdict(s) for s in self.winner.stages],
            },  # fmt: skip
            "winner_config": None if self.winner_config is None else str(self.winner_config),
            "front": self.front(),
            "final_compare": self.final,
            "left_out": self.left_out,
            "answer": self.lines(),
        }


def serve(state, plan, shared: Sequence[str]) -> None:
    """--objective server: the winner's serving configurations searched, the best written as serving.yaml, and the
    final compare against each backend's best pipeline (and the latency winner) with default scheduling. ``state``:
    the tune's (speechperf.tune.run), after its pipelines ran whole; ``plan``: its screening plan; ``shared``: the
    sets every final cell takes (at least one warm-up)."""
    from speechperf.benchmark.validate import batch_refusal
    from speechperf.config.load import load_config
    from speechperf.launch.cell import Cell
    from speechperf.tune import report
    from speechperf.values import usable_cores

    served, winner, cfg = state.serving, state.winner, state.cfg
    assert served is not None and winner is not None and state.winner_config is not None
    assert state.screening is not None
    chosen = load_config(state.winner_config)
    batches = [batch_refusal(s, role) is None for s, role in zip(chosen.stages, chosen.roles)]
    rows = state.screening.rows
    stage_ms = [rows[c.key].mean if c.key in rows else None for c in winner.stages] or [None] * len(cfg.stages)
    configs = candidates(state.opts.threads, stage_ms, batches, usable_cores())
    backend = winner.stages[0].backend if winner.stages else plan.backend
    log.info("tune: serving: %d configuration(s) of the winner %s, at p%g <= %g ms", len(configs), winner.name,
             served.percentile, served.bound_ms)  # fmt: skip
    served.search(Cell("serving", backend, winner.threads, state.winner_config), configs, state.write)
    if served.winner is None:
        state.write()
        return
    served.winner_config = write_serving_config(state.winner_config, served.winner, state.opts.out_dir / SERVING_CONFIG)
    log.info("tune: serving: the winner's config: %s", served.winner_config)
    cells = [
        Cell(f"serving winner {served.winner.name}", backend, served.winner.threads, served.winner_config),
        Cell("latency winner, default scheduling", backend, winner.threads, state.winner_config),
    ]
    for name in state.opts.backends:
        best = report.single_framework(state.screening, name, len(cfg.stages))
        sets = tuple(s for c in best for s in c.sets) if best else None
        if sets is not None and sets != winner.sets:
            cells.append(
                Cell(f"{name} only, default scheduling", name, winner.threads, plan.config, None, (*shared, *sets))
            )
    served.compare(cells, state.write, served.winner_rate)
    state.write()


def _least_valid_samples(json_path: str) -> int | None:
    """The fewest samples a VALID trial of a child's search served: a query count early stopping accepted."""
    try:
        runs = json.loads(Path(json_path).read_text()).get("runs") or []
        counts = [int(r["samples"]) for r in runs if (r.get("summary") or {}).get("valid")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return min(counts) if counts else None


def _shown(m: Measured) -> str:
    if m.completed_qps:
        bound = " (a lower bound)" if m.lower_bound else ""
        return (
            f"{m.completed_qps:.3g} completed samples/s{bound}, p at the peak {m.latency_ms:.0f} ms, {m.wall_s:.0f} s"
        )
    return f"{m.result}: {m.stopped or m.reason or 'no VALID trial'} ({m.wall_s:.0f} s)"
