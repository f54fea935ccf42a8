"""End to end: the best per-stage candidates combined into pipelines, run whole with quality scored, judged.

A cascade's time is the sum of its stages' and its memory their max, so the screening ranks each stage alone; but
an int8 ASR's errors reach the MT and the TTS, so quality is only known end to end. The survivors of each stage
(its ``TOP`` fastest, plus its fastest fp32 one, so a pipeline within any budget exists) are combined, the
combinations ranked by their predicted objective, and the first ``max_pipelines`` run whole (fresh processes, the
quality meter on) beside the reference pipeline. Each is judged against the reference's quality with optimize's
rules (``speechperf.optimize.fidelity.over_budget``: WER points, BLEU / ASR-BLEU points, DNSMOS). The Pareto front
is taken over latency (or throughput), peak memory, model size and quality.
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from speechperf.compare.quality import total_score
from speechperf.compare.summary import summarize
from speechperf.launch.result import RunResult
from speechperf.optimize.fidelity import Fidelity, QualityBudget, over_budget
from speechperf.tune import verdict
from speechperf.tune.runs import Runner
from speechperf.tune.screen import Screened, Screening, ScreenPlan
from speechperf.tune.space import FP32, StageCandidate

log = logging.getLogger(__name__)

#: Candidates of each stage that enter the combinations (their fastest fp32 one is added when not among them).
TOP = 2
REFERENCE = "reference (fp32, default paths)"


@attrs.define
class Pipeline:
    """One combination: a candidate per stage, and what running it whole gave."""

    name: str
    stages: tuple[StageCandidate, ...]
    predicted: float | None = None  # the screening's sum of stage times (s), or max of peaks (MiB)
    runs: list[RunResult] = attrs.Factory(list)
    mean_s: float | None = None
    stdev_s: float | None = None
    samples_per_s: float | None = None
    peak_mib: float | None = None
    size_bytes: int | None = None
    quality: str | None = None  # the headline ("ASR-BLEU 31.2", "WER 4.1% CER 2.0%")
    metric: str | None = None  # "WER", "BLEU", "ASR-BLEU"
    value: float | None = None  # WER in %, BLEU points
    status: str = "not run: budget spent"
    front: bool = False
    batch_size: int = 1
    deltas: list = attrs.Factory(list)  #: speechperf.tune.verdict.Delta: its WER / BLEU loss, with the interval

    @property
    def threads(self) -> int:
        return self.stages[0].threads

    @property
    def sets(self) -> tuple[str, ...]:
        return tuple(s for c in self.stages for s in c.sets)

    @property
    def within_budget(self) -> bool:
        return self.status.startswith("within budget") or self.status == "winner"


def combinations(screening: Screening, stages: int, max_pipelines: int, objective: str) -> list[Pipeline]:
    """The pipelines to run whole, best predicted first: each stage's ``top`` fastest (as many as
    ``max_pipelines`` allows over the stages, at least TOP) and its fastest fp32 one."""
    top = max(TOP, int(max_pipelines ** (1 / stages) + 1e-9))
    choices = []
    for stage in range(1, stages + 1):
        alive = screening.survivors(stage)
        chosen = alive[:top]
        fp32 = next((r for r in alive if r.candidate.precision == FP32), None)
        if fp32 is not None and fp32 not in chosen:
            chosen.append(fp32)
        if not chosen:
            return []
        choices.append(chosen)
    out = []
    for combo in itertools.product(*choices):
        if len({r.candidate.threads for r in combo}) != 1:
            continue  # one process runs every stage at one thread count
        out.append(Pipeline(" + ".join(_short(r.candidate) for r in combo), tuple(r.candidate for r in combo),
                            _predict(combo, objective)))  # fmt: skip
    out.sort(key=lambda p: p.predicted if p.predicted is not None else math.inf)
    return out[:max_pipelines]


def _short(c: StageCandidate) -> str:
    precision = "" if c.precision == FP32 else f" {c.precision}"
    return f"{c.backend}:{c.variant}{precision}"


def _predict(combo: Sequence[Screened], objective: str) -> float | None:
    values = [v for r in combo if (v := r.mean) is not None]
    if len(values) < len(combo):
        return None
    return max(values) if objective == "memory" else sum(values)


def run_pipelines(
    reference: Pipeline,
    pipelines: Sequence[Pipeline],
    plan: ScreenPlan,
    end_sets: Sequence[str],
    runs: int,
    runner: Runner,
    reserve_s: Callable[[], float],
    expect_s: float = 0.0,
) -> list[Pipeline]:
    """The reference and each pipeline, ``runs`` times each, interleaved (reference, A, B, reference, A, B...);
    the reference's runs are filled in as they finish (the time left for what follows is estimated from them), and
    a run it already has is not run again. A pipeline's run starts only while ``expect_s`` is left after
    ``reserve_s()``."""
    from speechperf.tune.screen import Rung

    whole = Rung(0, 0, runs)  # the dataset and repeat of the config, with the quality meter (end_sets)
    everyone = [reference, *pipelines]
    for run in range(runs):
        for p in everyone:
            if len(p.runs) > run or (run > 0 and not p.runs):
                continue  # run already (the reference's first), or its first run never started: the budget is spent
            label = f"end to end: {p.name}"
            cell = attrs.evolve(plan.cell(label, whole, p.threads if p.stages else _threads(pipelines)),
                                sets=(*plan.sets, *end_sets, f"general.batch_size={p.batch_size}", *p.sets))  # fmt: skip
            if p is reference:
                got = runner.run(cell, run, f"{label} run{run}")
            else:
                got = runner.run(cell, run, f"{label} run{run}", reserve_s(), expect_s)
            if got is not None:
                p.runs.append(got)
    for p in everyone:
        _figures(p)
    return list(pipelines)


def _threads(pipelines: Sequence[Pipeline]) -> int:
    return pipelines[0].threads if pipelines else 1


def _figures(p: Pipeline) -> None:
    if not p.runs:
        return
    ok = [r for r in p.runs if r.ok]
    if not ok:
        p.status = f"failed: {p.runs[0].reason}"
        return
    label = p.runs[0].label
    summary = summarize([_cell(label, p)], ok)[0]
    p.mean_s, p.stdev_s = summary.mean, summary.stdev
    p.samples_per_s, p.peak_mib = summary.samples_per_s, summary.peak_mib
    score = next((s for r in ok for s in [total_score(r)] if s is not None), None)
    if score is not None:
        p.quality = score.headline()
        primary = score.primary
        if primary is not None:
            p.metric, p.value = primary
    p.status = "measured"


def _cell(label: str, p: Pipeline):
    from speechperf.launch.cell import Cell

    return Cell(label, p.stages[0].backend if p.stages else "-")


def judge(reference: Pipeline, pipelines: Sequence[Pipeline], budget: QualityBudget, objective: str) -> Pipeline | None:
    """Each measured pipeline within the quality budget or over it (with what it lost); returns the winner: the
    best objective among those within it. WER and BLEU are judged with their paired bootstrap interval
    (speechperf.tune.verdict): over the budget only where the data shows it."""
    ref = _fidelity(reference)
    ref_utterances = _utterances(reference)
    for p in pipelines:
        if p.status != "measured":
            continue
        mine = _fidelity(p)
        lost, p.deltas = quality_verdict(ref_utterances, _utterances(p), ref, mine, budget)
        if lost:
            p.status = f"over quality budget ({', '.join(lost)})"
        elif ref is None or mine is None:
            p.status = "within budget (no quality to judge: no score against references)"
        else:
            shown = "; ".join(d.text() for d in p.deltas)
            p.status = f"within budget ({shown})" if shown else "within budget"
    within = [p for p in pipelines if p.within_budget]
    if not within:
        return None
    winner = min(within, key=lambda p: objective_value(p, objective))
    winner.status = "winner"
    return winner


def quality_verdict(ref_utterances, utterances, ref: Fidelity | None, mine: Fidelity | None, budget: QualityBudget):
    """(what is lost past ``budget``, the WER / BLEU deltas with their intervals). A WER or BLEU figure with
    per-utterance scores is over only where its interval's lower end is past the budget; the others (DNSMOS, MCD,
    agreement, a score without per-utterance figures) by optimize's rules."""
    deltas = []
    limits = {"WER": budget.max_wer_increase, "BLEU": budget.max_bleu_drop}
    if ref_utterances and utterances:
        for found in (verdict.wer_delta(ref_utterances, utterances), verdict.bleu_delta(ref_utterances, utterances)):
            if found is not None and limits[found.metric] is not None:
                deltas.append(found)
    judged = {d.metric for d in deltas}
    rest = attrs.evolve(
        budget,
        max_wer_increase=None if "WER" in judged else budget.max_wer_increase,
        max_bleu_drop=None if "BLEU" in judged else budget.max_bleu_drop,
    )
    lost = [d.text() for d in deltas if d.shown_over(limits[d.metric] or 0.0)]
    return lost + over_budget(ref, mine, rest), deltas


def _utterances(p: Pipeline) -> list[dict]:
    """Per utterance, the first finished run's scores (decoding is deterministic: its runs agree)."""
    return next((u for r in p.runs if r.ok for u in [verdict.utterances(r.json_path)] if u), [])


def objective_value(p: Pipeline, objective: str) -> float:
    """Smaller is better: seconds per sample, MiB, or minus samples per second."""
    if objective == "memory":
        return p.peak_mib if p.peak_mib is not None else math.inf
    if objective == "throughput":
        return -p.samples_per_s if p.samples_per_s else math.inf
    return p.mean_s if p.mean_s is not None else math.inf


def _fidelity(p: Pipeline) -> Fidelity | None:
    score = next((s for r in p.runs if r.ok for s in [total_score(r)] if s is not None), None)
    return None if score is None else Fidelity("quality", None, quality=score, speech=score.speech)


def pareto_front(pipelines: Sequence[Pipeline], objective: str) -> list[Pipeline]:
    """The measured pipelines no other one beats on every axis: objective, peak memory, model size, quality."""
    measured = [p for p in pipelines if p.mean_s is not None]

    def axes(p: Pipeline) -> tuple[float, ...]:
        quality = math.inf if p.value is None else (p.value if p.metric == "WER" else -p.value)
        return (
            objective_value(p, objective),
            p.peak_mib if p.peak_mib is not None else math.inf,
            p.size_bytes if p.size_bytes is not None else math.inf,
            quality,
        )

    def dominates(a: tuple, b: tuple) -> bool:
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))

    front = [p for p in measured if not any(dominates(axes(q), axes(p)) for q in measured if q is not p)]
    for p in front:
        p.front = True
    return front


def spread(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def record(p: Pipeline) -> dict[str, Any]:
    return {
        "pipeline": p.name,
        "stages": [c.key for c in p.stages],
        "predicted": p.predicted,
        "mean_ms": None if p.mean_s is None else round(p.mean_s * 1e3, 3),
        "stdev_ms": None if p.stdev_s is None else round(p.stdev_s * 1e3, 3),
        "samples_per_s": p.samples_per_s,
        "peak_rss_mib": p.peak_mib,
        "size_mb": None if p.size_bytes is None else round(p.size_bytes / 1e6, 3),
        "quality": p.quality,
        "front": p.front,
        "status": p.status,
        "runs": len([r for r in p.runs if r.ok]),
        "quality_deltas": [attrs.asdict(d) for d in p.deltas],
        "utterance_errors": utterance_errors(p),
    }


def utterance_errors(p: Pipeline) -> list[dict[str, Any]] | None:
    """Per utterance, the word errors and reference words (WER) or the sentence BLEU the verdict was drawn from."""
    keep = ("id", "errors", "words", "bleu")
    return [{k: u[k] for k in keep if u.get(k) is not None} for u in _utterances(p)] or None
