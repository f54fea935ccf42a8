"""``speechperf tune``: the fastest way to run a pipeline on this machine within a quality budget.

1. The int8 variants every backend's methods make (speechperf.tune.quantized, cached by content).
2. Every candidate of every stage screened by successive halving in fresh processes (speechperf.tune.screen).
3. The best per-stage candidates combined and run whole with quality scored; each pipeline judged against the
   reference's quality (speechperf.tune.combine); the Pareto front.
4. The winner written as a bench config with its model files (``--out-dir``), then a final interleaved
   ``speechperf compare`` of the winner, each backend's best single-framework pipeline and the all-default one.

Every process's result is kept as it finishes (speechperf.tune.runs): a rerun resumes. The result document
(``kind: tune``) is rewritten through the exports as each phase ends; Ctrl-C keeps it (``complete: false``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import platform
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.cache import cache_dir
from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError
from speechperf.exports import Exports
from speechperf.lifecycle import Lifecycle, lifecycle
from speechperf.optimize.fidelity import QualityBudget
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, machine
from speechperf.tune import answer, combine, report, verdict
from speechperf.tune.answer import DEFAULT_CELL, WINNER_CELL, settle
from speechperf.tune.combine import Pipeline
from speechperf.tune.quantized import Int8Maker
from speechperf.tune.quiet import third_party_to_log
from speechperf.tune.runs import Budget, Runner, state_digest
from speechperf.tune.screen import Screening, ScreenPlan, rungs, screen
from speechperf.tune.space import (
    INT8,
    PRUNED,
    Dropped,
    StageCandidate,
    cpu_has_bf16,
    float_candidates,
    pending_int8_candidates,
    with_int8_files,
)
from speechperf.views import tune as tune_view

log = logging.getLogger(__name__)

OBJECTIVES = ("latency", "throughput", "memory", "server")
#: The pipelines run whole, best predicted first.
MAX_PIPELINES = 4
#: Runs of each pipeline end to end (two give a σ), and of each cell of the final compare.
PIPELINE_RUNS = 2
FINAL_RUNS = 3
WINNER_CONFIG = "winner.yaml"
#: What is kept for the end-to-end runs and the final compare, over their estimate: the time between phases (writing
#: the winner, the documents) and runs slower than the reference's (the first such tune here kept the exact
#: estimate, 684 s, and had 684 s left, a hair short, so its final compare did not run).
MARGIN = 1.15
#: Seconds the screening leaves on top, for the work between the phases (the last process stopped, the sizes, the
#: combinations): a 600 s tune stopped its screening at its reserve and had 2 s too few for its pipeline's run.
PHASE_SLACK_S = 30.0


@attrs.frozen
class TuneOptions:
    backends: tuple[str, ...]
    precisions: tuple[str, ...]
    threads: tuple[int, ...]
    objective: str
    budget_s: float
    budget: QualityBudget
    out_dir: Path
    exports: Exports
    batch_sizes: tuple[int, ...] = (1,)
    calibration_size: int = 4
    timeout_s: float | None = None
    final_runs: int = FINAL_RUNS
    executor: str = "local"  # or "ray": the candidates' processes as Ray tasks
    jobs: int = 1
    plot: Path | None = None
    options: dict[str, Any] = attrs.Factory(dict)  #: the command's options as given, kept in the document
    workdir: Path = attrs.Factory(cache_dir)  #: where derived files, reference models and the int8 cache are made
    #: --objective server: the latency percentile and its bound in ms (speechperf.tune.serving.parse_latency)
    latency: tuple[float, float] | None = None


@attrs.define
class _Tune:
    """The state the document is written from as the phases end."""

    opts: TuneOptions
    cfg: BenchConfig
    budget: Budget
    runner: Runner | None = None
    screening: Screening | None = None
    reference: Pipeline | None = None
    pipelines: list[Pipeline] = attrs.Factory(list)
    winner: Pipeline | None = None
    winner_config: Path | None = None
    final: dict[str, Any] | None = None
    run: Lifecycle | None = None  #: where the document is written as the phases end
    environment: dict[str, Any] = attrs.Factory(machine)
    maker: Int8Maker | None = None  #: the int8 files, made as their candidates come up
    nothing: str | None = None  #: the one line when nothing could be measured
    short: bool = False  #: a budget too short for every pipeline and final cell (SHORT_SETS)
    verdict: dict[str, Any] | None = None  #: the final compare's verdict on the winner against the reference
    serving: Any = None  #: --objective server: the serving phases (speechperf.tune.serving.ServingTune)

    def document(self) -> Document:
        o = self.opts
        rows = report.rows(self.screening, self.reference, self.pipelines, o.objective)
        runner = self.runner
        body = {
            "objective": "server" if self.serving is not None else o.objective,
            "backends": list(o.backends),
            "precisions": list(o.precisions),
            "threads": list(o.threads),
            "batch_sizes": list(o.batch_sizes),
            "budget_s": o.budget_s,
            "elapsed_s": round(self.budget.elapsed, 1),
            "quality_budget": attrs.asdict(o.budget),
            "processes": {
                "run": runner.ran if runner else 0,
                "reused": runner.reused if runner else 0,
                "wall_s": round(runner.wall_s, 1) if runner else 0.0,
                "int8_variants_reused": self.maker.reused if self.maker else 0,
                "int8_variants_made": self.maker.made if self.maker else 0,
                "int8_making_s": round(self.maker.seconds, 1) if self.maker else 0.0,
            },
            "dropped": [attrs.asdict(d) for d in (self.screening.dropped if self.screening else [])],
            "front": [p.name for p in self.pipelines if p.front],
            "winner": None if self.winner is None else combine.record(self.winner),
            "winner_config": None if self.winner_config is None else str(self.winner_config),
            "final_compare": self.final,
            "verdict": self.verdict,
            "short_budget": self.short,
            "nothing_measured": self.nothing,
            "answer": answer.lines(self) + (self.serving.lines() if self.serving is not None else []),
            "serving": self.serving.body() if self.serving is not None else None,
            "options": o.options,
        }
        return Document(
            "tune",
            config=self.cfg.to_dict(),
            environment=self.environment,
            rows=rows,
            body=body,
        )

    def write(self) -> None:
        if self.run is not None:
            self.run.write(self.document())


#: Exit codes: an answer (a winner, or the reference where nothing beat it); no pipeline within the quality budget
#: (every one measured over it or failed, or the budget ended before one ran whole); nothing measured at all.
EXIT_ANSWER, EXIT_NO_WINNER, EXIT_NOTHING_MEASURED = 0, 1, 3


def run_tune(cfg: BenchConfig, opts: TuneOptions, out=None) -> int:
    """The whole tune through the command lifecycle; returns the exit code (EXIT_*)."""
    from speechperf.outputs import check_output_folder

    with lifecycle(opts.exports, out=out or sys.stdout) as run:  # the exports checked before any process
        if opts.plot is not None:
            from speechperf.views.optimize_plot import check_plot_path

            check_plot_path(opts.plot)
        check_output_folder(opts.out_dir, "--out-dir")
        workdir = opts.workdir
        with third_party_to_log():  # the frameworks imported to list their variants and methods
            _check(cfg, opts)
            state = _state(cfg, opts, run)
            candidates, dropped = _candidates(cfg, opts)
        log.info("tune: %s", _first_line(cfg, opts, candidates, dropped))
        with third_party_to_log():  # the derived files (an ONNX export logs its constant folding)
            _check_configs(cfg, opts, workdir)
        probe = LoadProbe().start()
        try:
            try:
                code = _search(state, workdir, candidates, dropped)
            finally:
                state.environment["load"] = probe.stop()
        except KeyboardInterrupt:
            state.write()  # what was measured, as it stands; the lifecycle marks it incomplete
            raise
        doc = state.document()
        if opts.plot is not None and tune_view.draw(doc, opts.plot) is not None:
            log.info("Pareto plot %s", opts.plot)
        return run.finish(doc, code)


def _state(cfg: BenchConfig, opts: TuneOptions, run: Lifecycle) -> _Tune:
    """The tune's state; --objective server: the latency tune's phases on a share of --budget, the serving phases
    (speechperf.tune.serving) after them on the rest."""
    if opts.objective != "server":
        return _Tune(opts, cfg, Budget(opts.budget_s), run=run)
    from speechperf.tune import serving

    phases = attrs.evolve(opts, objective="latency", budget_s=opts.budget_s * serving.LATENCY_SHARE, final_runs=0)
    state = _Tune(phases, cfg, Budget(phases.budget_s), run=run)
    percentile, bound = opts.latency or serving.DEFAULT_LATENCY
    whole = Budget(opts.budget_s, start=state.budget.start)
    state.serving = serving.ServingTune(percentile, bound, opts.out_dir, whole, opts.final_runs, opts.timeout_s)
    return state


def _check(cfg: BenchConfig, opts: TuneOptions) -> None:
    """What can be refused before any process: the executor, the objective, every backend installed."""
    from speechperf.launch.executors import get_executor
    from speechperf.registry import require_backend

    get_executor(opts.executor, opts.jobs)  # ray installed, jobs the executor can run: before any quantizing
    if opts.objective not in OBJECTIVES:
        raise SpeechperfError(f"--objective {opts.objective}: unknown; allowed: {', '.join(OBJECTIVES)}")
    if opts.objective == "throughput" and opts.batch_sizes == (1,):
        log.warning("--objective throughput with --batch-sizes 1: samples one at a time; give --batch-sizes 1,8")
    for name in opts.backends:
        require_backend(name)


def _check_configs(cfg: BenchConfig, opts: TuneOptions, workdir: Path) -> None:
    """The config for every backend searched: a derived file exported once, here, for every child."""
    from speechperf.benchmark import plan

    for name in opts.backends:
        plan.check(cfg, name, workdir)


def _candidates(cfg: BenchConfig, opts: TuneOptions) -> tuple[list[StageCandidate], list[Dropped]]:
    """Every candidate of every stage: the fp32 / bf16 variants, and the int8 methods, whose files are made when
    their candidate comes up (speechperf.tune.quantized.Int8Maker). The techniques are enumerated in
    speechperf.tune.order.TECHNIQUES; each adds its candidates here."""
    candidates, dropped = float_candidates(cfg, opts.backends, opts.precisions, opts.threads, cpu_has_bf16())
    if INT8 in opts.precisions or PRUNED in opts.precisions:
        candidates += pending_int8_candidates(len(cfg.stages), opts.backends, opts.threads, opts.precisions)
    return candidates, dropped


def _first_line(cfg: BenchConfig, opts: TuneOptions, candidates, dropped) -> str:
    """What the search holds and what is known of its cost before anything ran."""
    pending = sum(1 for c in candidates if c.pending)
    made = f" ({pending} int8 or pruned, their files made when they come up)" if pending else ""
    return (
        f"{len(candidates)} candidate(s){made} over {len(cfg.stages)} stage(s) and {len(opts.backends)} "
        f"backend(s), {len(dropped)} dropped before any run; each backend's default first; one screening pass "
        f"over every candidate: unknown until the first process is measured; --budget {opts.budget_s:.0f} s"
    )


def _search(state: _Tune, workdir: Path, candidates: list[StageCandidate], dropped: list[Dropped]) -> int:
    from speechperf.data import load_dataset
    from speechperf.optimize.variants import config_dict

    opts, cfg = state.opts, state.cfg
    dataset_size = len(load_dataset(cfg.general, cfg.roles[0]))
    ladder = rungs(dataset_size, cfg.general.repeat)
    reference_backend = opts.backends[0]
    plan = ScreenPlan(
        reference_backend,
        config_dict(cfg, reference_backend),
        (
            *_final_sets(cfg),
            f"general.meters={_screen_meters(opts.objective)}",
            f"general.batch_size={max(opts.batch_sizes)}",
        ),
        opts.objective,
        {f"stage{i}": s.tolerance for i, s in enumerate(cfg.stages, 1) if s.tolerance},
    )
    fingerprint = (platform.node(), state.environment.get("cpu"), state.environment.get("cpu_count"))
    digest = state_digest(plan.config, plan.sets, ladder, fingerprint, opts.calibration_size, opts.batch_sizes)
    state.runner = Runner(opts.out_dir / "state", digest, state.budget, opts.timeout_s, opts.executor, opts.jobs)
    state.maker = Int8Maker(cfg, workdir / "tune" / "int8", workdir, opts.calibration_size)
    if state.runner.known:
        log.info(
            "tune: resuming: %d finished process(es) of an earlier run of this tune are reused", len(state.runner.known)
        )
    note = _resolution(cfg, reference_backend, workdir, opts.budget)
    if note:
        log.warning("tune: %s", note)
    # The reference run whole first: the quality every pipeline is judged against, and the time one scored process
    # takes, which sizes what the screening must leave for the end-to-end runs and the final compare.
    state.reference = combine.Pipeline(combine.REFERENCE, (), batch_size=max(opts.batch_sizes))
    combine.run_pipelines(state.reference, [], plan, END_SETS, 1, state.runner, lambda: 0.0)
    if _scored_wall(state) is None:
        state.nothing = _nothing_measured(state, candidates)
        return EXIT_NOTHING_MEASURED
    state.short = _tight(state)
    if state.short:
        log.info(
            "tune: a short budget for this pipeline (one scored process takes %.0f s): after the screening, one "
            "pipeline runs whole, and it and the final compare time one pass (general.repeat=1) without the "
            "memory pass",
            _full_wall(state),
        )

    def reserve(found: Screening | None = None) -> float:
        return _reserve(state)

    def prepare(cand: StageCandidate, reserve_s: float, expect_s: float) -> StageCandidate | Dropped | None:
        """A pending int8 candidate's files, made now if what is left pays for making them and one run."""
        assert state.maker is not None
        method = cand.precision.partition(":")[2]
        cost = state.maker.cost(cand.backend, method, cand.stage)
        if cost is None:  # never made here: as long as those this tune made took, else as the reference's first
            # whole-dataset process (calibrating feeds calibration_size samples through the stages and checks one
            # more: ort-dynamic on Whisper tiny.en took 74 s on a busy machine, its reference process 80 s)
            cost = state.maker.seconds / state.maker.made if state.maker.made else (_full_wall(state) or 0.0)
        if state.budget.left - reserve_s < cost + expect_s:
            return None
        return with_int8_files(cand, state.maker.make(cand.backend, method, cand.stage))

    def announce(found: Screening) -> None:
        log.info("tune: %s", _pass_line(state, candidates, found))

    state.screening = screen(candidates, dropped, plan, ladder, state.runner, reserve, prepare, announce)
    with third_party_to_log():  # a size may build a format's files
        for row in state.screening.rows.values():
            if row.values:
                row.size_bytes = report.stage_size(cfg, row.candidate)
    state.write()
    if not any(row.values for row in state.screening.rows.values()):
        state.nothing = _nothing_measured(state, candidates)
        return EXIT_NOTHING_MEASURED
    _end_to_end(state, plan)
    state.write()
    if state.winner is None:
        log.error("tune: %s", answer.no_winner(state))
        return EXIT_NO_WINNER
    state.winner_config = _write_winner(state, plan)
    if state.serving is not None:
        from speechperf.tune.serving import serve

        serve(state, plan, _final_sets(state.cfg))
        return EXIT_ANSWER if state.serving.winner is not None else EXIT_NO_WINNER
    with third_party_to_log("final compare output"):
        state.final = _final_compare(state, plan, workdir)
    state.verdict = settle(state)
    if state.verdict["answer"] == "reference":
        _keep_the_reference(state, plan)
    return EXIT_ANSWER


def _answer_processes(opts: TuneOptions) -> int:
    """The fewest processes an answer needs after the screening: the best pipeline run whole once (its quality),
    and a final compare of the winner against the all-default pipeline (its speed, with σ and p)."""
    return len(opts.batch_sizes) + 2 * opts.final_runs


def _reserve(state: _Tune) -> float:
    """What the screening leaves for what follows: every pipeline and every final cell where that is at most half
    the budget, else what one answer needs (a 600 s budget on Whisper tiny.en kept 24 processes' time, more than it
    had, and screened nothing)."""
    opts = state.opts
    wall = _scored_wall(state) or 0.0
    return wall * (_answer_processes(opts) if state.short else _every_process(opts)) * MARGIN + PHASE_SLACK_S


def _every_process(opts: TuneOptions) -> int:
    """Every pipeline run whole (twice), the reference's second run and every final compare cell."""
    return MAX_PIPELINES * len(opts.batch_sizes) * PIPELINE_RUNS + PIPELINE_RUNS - 1 + _final_processes(opts)


def _tight(state: _Tune) -> bool:
    """A budget where every pipeline and every final cell would take more than half of it."""
    return (_full_wall(state) or 0.0) * _every_process(state.opts) * MARGIN > state.opts.budget_s / 2


#: On a short budget, the whole-dataset processes after the reference's first: one timed pass, no memory pass
#: (the first reference process of Whisper tiny.en on 5 clips took 75 s on a busy 2-core machine: nine such
#: processes are more than a 600 s budget), and what they take, as a share of the reference's first.
SHORT_SETS = ("general.repeat=1",)
SHORT_SHARE = 0.5


def _end_sets(state: _Tune) -> tuple[str, ...]:
    if not state.short:
        return END_SETS
    meters = "[runtime,memory,quality]" if state.opts.objective == "memory" else "[runtime,quality]"
    return (f"general.meters={meters}", *SHORT_SETS)


def _pass_line(state: _Tune, candidates: Sequence[StageCandidate], found: Screening) -> str:
    """How long one screening pass over every candidate is expected to take, and what the budget covers of it."""
    assert state.maker is not None
    process = found.first_wall_s
    if process is None:
        return "one screening pass: unknown: no screening process fitted in what is left after an answer's time"
    guess = _full_wall(state) or 0.0  # a set never made here: as long as the reference's first process
    costs: dict[tuple[str, str, int], float | None] = {}  # each file set once, in the order its candidate comes up
    for c in candidates:
        if c.pending:
            key = file_set(c)
            costs.setdefault(key, state.maker.cost(*key))
    to_make = [c for c in costs.values() if c != 0.0]  # not cached: made by this tune when its candidate comes up
    known, unknown = sum(c for c in to_make if c is not None), sum(1 for c in to_make if c is None)
    making = ""
    if to_make:
        parts = [f"{known:.0f} s as last made here"] if len(to_make) > unknown else []
        parts += [f"{unknown} never made here, about {guess:.0f} s each (a guess)"] if unknown else []
        making = f" + making {len(to_make)} int8 or pruned file set(s): {', '.join(parts)}"
    reserve = _reserve(state)
    room = state.budget.left - reserve
    total, covers = pass_cover(candidates, process, costs, guess, room)
    return (
        f"one screening pass over {len(candidates)} candidate(s): about {total:.0f} s ({len(candidates)} "
        f"process(es) of about {process:.0f} s, the reference's first{making}); {max(0.0, room):.0f} s of --budget "
        f"{state.opts.budget_s:.0f} are left for it after {reserve:.0f} s kept for an answer: it covers about "
        f"{covers} of them"
    )


def file_set(cand: StageCandidate) -> tuple[str, str, int]:
    """The (backend, method, stage) whose int8 or pruned files a pending candidate needs: what Int8Maker makes."""
    return cand.backend, cand.precision.partition(":")[2], cand.stage


def pass_cover(
    candidates: Sequence[StageCandidate],
    process_s: float,
    costs: dict[tuple[str, str, int], float | None],
    guess_s: float,
    room_s: float,
) -> tuple[float, int]:
    """One screening pass's seconds, and how many candidates, taken in order, fit in ``room_s``: each one process,
    and a pending candidate the making of its file set the first time that set comes up (``costs``: 0 cached, None
    never made here, then ``guess_s``)."""
    total, covers, made = 0.0, 0, set()
    for c in candidates:
        total += process_s
        if c.pending:
            key = file_set(c)
            if key not in made:
                made.add(key)
                cost = costs.get(key)
                total += guess_s if cost is None else cost
        if total <= room_s:
            covers += 1
    return total, covers


def _nothing_measured(state: _Tune, candidates: Sequence[StageCandidate]) -> str:
    """The one line when no candidate could be measured: what a first pass needs."""
    wall = _scored_wall(state)
    opts = state.opts
    if wall is None:  # the reference itself did not finish: at least its time, once per candidate and answer
        spent = max([r.wall_s or 0.0 for r in (state.reference.runs if state.reference else [])] or [0.0])
        wall = max(spent, state.budget.elapsed)
        need = wall * (2 + len(candidates) + _answer_processes(opts)) * MARGIN
        return (
            f"nothing measured: the reference pipeline did not finish within --budget {opts.budget_s:.0f} s; a "
            f"first pass needs more than that: try --budget {_round_up(need)} or more"
        )
    making = 0.0
    if state.maker is not None:
        costs = [state.maker.cost(*file_set(c)) for c in candidates if c.pending]
        making = sum(c for c in costs if c)
    # a screening process: the first rung's reference where it ran, else (an upper bound) a whole scored one
    first = state.screening.first_wall_s if state.screening else None
    process = first or wall
    need = state.budget.elapsed + process * len(candidates) * MARGIN + making + _reserve(state)
    return (
        f"nothing measured: --budget {opts.budget_s:.0f} s left no time for a candidate after the reference "
        f"({wall:.0f} s a process) and what an answer needs; a first pass needs about --budget {_round_up(need)}"
    )


def _round_up(seconds: float) -> int:
    return int(math.ceil(seconds / 60.0) * 60)


def _resolution(cfg: BenchConfig, backend: str, workdir: Path, budget: QualityBudget) -> str | None:
    """The quality budget against what the dataset can resolve: N reference words make one error 100/N points."""
    from speechperf.benchmark import plan as run_plan

    try:
        with third_party_to_log():
            resolved = run_plan.resolve(cfg, backend, workdir=workdir, quality="meters")
    except SpeechperfError:
        return None
    refs = resolved.references
    if refs is None or not refs.texts or refs.translation or not resolved.score_quality:
        return None
    ids = [getattr(s, "id", None) for s in resolved.dataset]
    words = sum(len(refs.texts[i].split()) for i in ids if i in refs.texts)
    return verdict.resolution_note(words, budget.max_wer_increase)


def _end_to_end(state: _Tune, plan: ScreenPlan) -> None:
    opts, cfg = state.opts, state.cfg
    assert state.screening is not None and state.runner is not None
    base = combine.combinations(state.screening, len(cfg.stages), MAX_PIPELINES, opts.objective)
    pipelines = []
    for size in opts.batch_sizes:
        for p in base:
            name = p.name if len(opts.batch_sizes) == 1 else f"{p.name} batch {size}"
            pipelines.append(attrs.evolve(p, name=name, batch_size=size))
    assert state.reference is not None

    def reserve() -> float:  # the final compare's processes score quality as these do: timed by the reference's
        if not any(p.runs for p in pipelines):  # the first pipeline's run is the answer's least: it always may start
            return 0.0
        processes = 2 * opts.final_runs if state.short else _final_processes(opts)  # a short budget: 2 cells
        return (_scored_wall(state) or 0.0) * processes * MARGIN

    runs = PIPELINE_RUNS
    if state.short:  # the best predicted pipeline once, for its quality: the final compare times it
        pipelines, runs = pipelines[: len(opts.batch_sizes)], 1
    log.info("tune: %d pipeline(s) end to end, %d run(s) each, with the reference", len(pipelines), runs)
    state.pipelines = combine.run_pipelines(
        state.reference, pipelines, plan, _end_sets(state), runs, state.runner, reserve, _scored_wall(state) or 0.0
    )
    for p in state.pipelines:
        p.size_bytes = report.pipeline_size(cfg, p)
    state.winner = combine.judge(state.reference, state.pipelines, opts.budget, opts.objective)
    combine.pareto_front(state.pipelines, opts.objective)


#: The end-to-end runs' meters: quality is judged there (scored wherever the dataset allows it).
END_SETS = ("general.meters=[runtime,memory,quality]",)


def _screen_meters(objective: str) -> str:
    """The screening's meters: the runtime alone (the memory meter costs a forward per sample and stage), and the
    peak RSS where it is the objective."""
    return "[runtime,memory]" if objective == "memory" else "[runtime]"


def _final_processes(opts: TuneOptions) -> int:
    """The final compare's processes: the winner, each backend's own pipeline, the all-default one."""
    return (len(opts.backends) + 2) * opts.final_runs


def _full_wall(state: _Tune) -> float | None:
    """Seconds the reference's first end-to-end process took (the config's repeat, every meter)."""
    walls = [r.wall_s for r in (state.reference.runs if state.reference else []) if r.ok and r.wall_s]
    return walls[0] if walls else None


def _scored_wall(state: _Tune) -> float | None:
    """Seconds one quality-scored whole-pipeline process takes: the reference's longest end-to-end run (on a
    short budget, its runs after the first, or the first's share until one ran)."""
    walls = [r.wall_s for r in (state.reference.runs if state.reference else []) if r.ok and r.wall_s]
    if walls and state.short:
        return max(walls[1:]) if len(walls) > 1 else walls[0] * SHORT_SHARE
    if walls:
        return max(walls)
    return state.screening.reference_wall_s if state.screening else None


def _write_winner(state: _Tune, plan: ScreenPlan) -> Path:
    """The winner as a bench config in --out-dir, its int8 files copied beside it."""
    from speechperf.config import write_config
    from speechperf.config.load import apply_sets

    winner = state.winner
    assert winner is not None
    out_dir = state.opts.out_dir
    data = _plain(plan.config)
    apply_sets(data, [*_final_sets(state.cfg), *winner.sets])
    data["general"]["threads"] = winner.threads
    if winner.batch_size != 1:
        data["general"]["batch_size"] = winner.batch_size
    for i in range(1, len(state.cfg.stages) + 1):
        stage = data[f"stage{i}"]
        for key in ("model_dir", "path"):
            source = stage.get(key)
            if source and _precision(winner, i).startswith((INT8, PRUNED)) and Path(source).exists():
                target = out_dir / "models" / f"stage{i}" / Path(source).name
                if target.exists():
                    shutil.rmtree(target) if target.is_dir() else target.unlink()
                target.parent.mkdir(parents=True, exist_ok=True)
                (shutil.copytree if Path(source).is_dir() else shutil.copy2)(source, target)
                stage[key] = str(target.resolve())
    path = write_config(data, out_dir / WINNER_CONFIG)
    log.info("tune: the winner's config: %s (speechperf bench --config %s)", path, path)
    return path


#: Where a tie leaves the candidate's config: winner.yaml is then the reference's.
TIED_CONFIG = "tied.yaml"


def _keep_the_reference(state: _Tune, plan: ScreenPlan) -> None:
    """A tie: ``winner.yaml`` becomes the reference pipeline (the answer), the tied candidate's config is kept as
    ``tied.yaml`` beside it."""
    from speechperf.config import write_config
    from speechperf.config.load import apply_sets

    assert state.winner_config is not None
    tied = state.winner_config.with_name(TIED_CONFIG)
    state.winner_config.replace(tied)
    data = _plain(plan.config)
    apply_sets(data, list(_final_sets(state.cfg)))
    data["general"]["threads"] = state.winner.threads if state.winner else 1
    state.winner_config = write_config(data, state.opts.out_dir / WINNER_CONFIG)
    log.info("tune: a tie: %s is the reference pipeline; the tied candidate's config is %s", state.winner_config, tied)


def _final_sets(cfg: BenchConfig) -> tuple[str, ...]:
    """What the winner's config and the final compare change in the user's config: at least one warm-up (a
    compiled variant compiles on its first call)."""
    return (f"general.warmup={max(1, cfg.general.warmup)}",)


def _precision(p: Pipeline, stage: int) -> str:
    return p.stages[stage - 1].precision


def _plain(config: dict[str, Any]) -> dict[str, Any]:
    import json

    return json.loads(json.dumps(config))


def _final_compare(state: _Tune, plan: ScreenPlan, workdir: Path) -> dict[str, Any] | None:
    """An interleaved compare of the winner, each backend's single-framework best and the all-default pipeline."""
    from speechperf.compare.run import CompareOptions, run_compare
    from speechperf.launch.cell import Cell
    from speechperf.results import read

    opts = state.opts
    winner = state.winner
    assert winner is not None and state.screening is not None and state.winner_config is not None
    runs_left = state.budget.left
    wall = _scored_wall(state) or 0.0
    # one timed pass a process on a short budget, without the memory and FLOP passes, every cell alike (a 600 s
    # tune's final compare with them ran 32 s past --budget)
    short = _end_sets(state) if state.short else ()
    shared = (*_final_sets(state.cfg), f"general.batch_size={winner.batch_size}", *short)  # as the winner's config
    # All default first: compare scores every cell's quality against its first, so the winner's is read against fp32.
    cells = [Cell(DEFAULT_CELL, plan.backend, winner.threads, plan.config, None, shared)]
    label = f"{WINNER_CELL}{winner.name}"
    cells.append(Cell(label, winner.stages[0].backend, winner.threads, state.winner_config, None, short))
    # Each cell's process time: the reference's, the winner's own, a backend's pipeline's from what its stages'
    # processes took over the reference's in the screening (paddle's Whisper loads for minutes where onnxruntime's
    # takes seconds).
    own = max([r.wall_s for r in winner.runs if r.ok and r.wall_s] or [wall])
    if state.short:  # the winner's run is the one measured process of this kind: no cell is expected faster (a
        wall = max(wall, own)  # 600 s tune that guessed half the reference's first process ran 32 s past --budget)
    walls = [wall, own]
    speeds = [0.0, 0.0]  # each single-framework pipeline's predicted seconds per sample: the sum of its stages'
    for backend in opts.backends:
        best = report.single_framework(state.screening, backend, len(state.cfg.stages))
        if best is None:
            log.info(
                "note: final compare: no %s-only pipeline: a stage has no %s fp32 candidate that passed",
                backend,
                backend,
            )
            continue
        sets = tuple(s for c in best for s in c.sets)
        if sets == winner.sets:  # the winner is this backend's own best: one cell, not two of the same pipeline
            continue
        cells.append(
            Cell(f"{backend} only, best variants", backend, winner.threads, plan.config, None, (*shared, *sets))
        )
        rows = [state.screening.rows[c.key] for c in best]
        walls.append(wall + sum(max(0.0, r.extra_wall_s or 0.0) for r in rows))
        speeds.append(sum(r.mean or 0.0 for r in rows))
    left_out = _fit_final_cells(cells, walls, speeds, opts.final_runs, runs_left)  # in the answer, and said now
    for line in left_out:
        log.warning("tune: %s", line)
    need = sum(walls) * opts.final_runs
    if need and need > runs_left:
        line = f"final compare not run: it needs about {need:.0f} s, {runs_left:.0f} s of --budget are left"
        log.warning("tune: %s", line)
        return {"skipped": line, "left_out": left_out}
    path = opts.out_dir / "final-compare.json"
    compare = CompareOptions(
        base=state.cfg,
        cells=tuple(cells),
        backends=tuple(dict.fromkeys(c.backend for c in cells)),
        threads=(winner.threads,),
        runs=opts.final_runs,
        timeout_s=opts.timeout_s,
        workdir=opts.out_dir / "final-compare",
        exports=Exports(json=path, markdown=opts.out_dir / "final-compare.md"),
        options={"from": "speechperf tune"},
        paths_searched=True,
    )
    log.info("tune: final compare: %d pipeline(s), %d interleaved run(s) each", len(cells), opts.final_runs)
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the tune's report alone; its answer has the sentences
        code = run_compare(compare)
    doc = read(path)
    comparisons = [c for ranking in doc.get("comparisons") or [] for c in ranking]
    quality = doc.get("quality") or {}
    return {
        "left_out": left_out,
        "exit_code": code,
        "json": str(path),
        "sentences": [c["sentence"] for c in comparisons],
        "comparisons": comparisons,
        "quality": quality,
        "quality_vs_fp32": _quality_vs_fp32(quality.get(cells[1].label), quality.get(DEFAULT_CELL)),
        "rows": [{k: r.get(k) for k in ("cell", "mean_ms", "stdev_ms", "quality")} for r in doc.rows],
    }


def _fit_final_cells(cells: list, walls: list[float], speeds: list[float], runs: int, left_s: float) -> list[str]:
    """Leave out of the final compare (in place) the single-framework cells whose pipelines are slowest per sample
    (``speeds``), until the runs (``walls``: seconds a process) of the rest fit in ``left_s``: the fastest
    competitor, the one the winner must beat, stays longest. The first two (all default, the winner) always stay.
    Returns a line for each cell left out."""
    lines = []
    while len(cells) > 2 and sum(walls) * runs > left_s:
        slowest = max(range(2, len(cells)), key=speeds.__getitem__)
        lines.append(
            f"final compare: {cells[slowest].label} left out (the slowest per sample of those left): its {runs} "
            f"run(s) need about {walls[slowest] * runs:.0f} s, and {left_s:.0f} s of --budget are left for every cell"
        )
        del cells[slowest], walls[slowest], speeds[slowest]
    return lines


def _quality_vs_fp32(winner: dict | None, fp32: dict | None) -> str | None:
    """The winner's headline score against the all-default pipeline's, both from the final compare."""
    if not winner or not fp32 or winner.get("value") is None or fp32.get("value") is None:
        return None
    if winner["metric"] != fp32["metric"]:
        return f"final compare: the winner is scored in {winner['metric']}, all default in {fp32['metric']}"
    metric, value, ref = winner["metric"], winner["value"], fp32["value"]
    return (
        f"final compare: the winner's {metric} {value:.2f} against all default (fp32) {ref:.2f}: "
        f"{value - ref:+.2f} points"
    )
