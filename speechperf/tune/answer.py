"""The tune's answer: the winner only where the data shows it faster than the reference, else the reference.

The pipelines are ranked on two runs each, so the fastest may be fastest by chance: a tune named
``onnxruntime:all-no-spinning`` (308 ms) the winner over the reference (312 ms), and its own final compare then
said the all-default pipeline "ran 1.01 ± 0.07 times faster than tune winner (not significant, p = 0.89)". The
final compare (or, where it could not run, the end-to-end runs) decides: the winner must be faster than the
all-default pipeline with Welch's p below stats.SIGNIFICANCE; otherwise it is a tie and the reference stays the
answer. When the budget ends first, the answer is the best measured so far against the reference, with its σ, and
what was left untried.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from speechperf import stats
from speechperf.tune.combine import REFERENCE, Pipeline

#: The final compare's all-default cell (speechperf.tune.run.DEFAULT_CELL) and the winner's cell's prefix.
DEFAULT_CELL = "all default"
WINNER_CELL = "tune winner: "


def settle(state) -> dict[str, Any]:
    """``{"answer": "winner" | "reference", "sentence", "p_value", "from"}``: whether the winner beat the
    reference significantly, from the final compare, else from the end-to-end runs."""
    final = state.final or {}
    winner = state.winner
    label = f"{WINNER_CELL}{winner.name}"
    comparison = _direct(final.get("comparisons") or [], label) or _from_rows(final.get("rows") or [], label)
    source = "final compare"
    if comparison is None:  # no final compare: the end-to-end runs, the winner's against the reference's
        comparison = _from_runs(winner, state.reference)
        source = "end-to-end runs"
    if comparison is None:
        return {"answer": "reference", "sentence": "the winner could not be compared with the reference",
                "p_value": None, "from": source}  # fmt: skip
    beat = comparison.fast != DEFAULT_CELL and comparison.fast != REFERENCE and bool(comparison.significant)
    out = {"answer": "winner" if beat else "reference", "sentence": comparison.sentence(),
           "p_value": comparison.p_value, "from": source}  # fmt: skip
    if not beat:
        winner.status = "tie: not significantly faster than the reference"
    return out


def _direct(comparisons: Sequence[dict], label: str) -> stats.Comparison | None:
    """The final compare's own comparison of the winner and the all-default pipeline, where it made one."""
    for c in comparisons:
        if {c.get("fast"), c.get("slow")} == {label, DEFAULT_CELL}:
            ratio = stats.Ratio(c["ratio"], c.get("sigma"))
            return stats.Comparison(c["fast"], c["slow"], ratio, c.get("p_value"))
    return None


def _from_rows(rows: Sequence[dict], label: str) -> stats.Comparison | None:
    """Welch's test from the two cells' means, σ and run counts (the final compare compares each cell with its
    fastest only: where another cell was fastest, the winner and all default were not compared directly)."""
    by = {r.get("cell"): r for r in rows}
    a, b = by.get(label), by.get(DEFAULT_CELL)
    if not a or not b or not a.get("mean_ms") or not b.get("mean_ms"):
        return None
    fast, slow = (a, b) if a["mean_ms"] <= b["mean_ms"] else (b, a)
    sa, sb = fast.get("stdev_ms"), slow.get("stdev_ms")
    na, nb = fast.get("runs_ok") or 0, slow.get("runs_ok") or 0
    value = slow["mean_ms"] / fast["mean_ms"]
    if sa is None or sb is None or na < 2 or nb < 2:
        return stats.Comparison(fast["cell"], slow["cell"], stats.Ratio(value, None), None)
    from scipy.stats import ttest_ind_from_stats

    p = None if sa == 0 and sb == 0 else float(
        ttest_ind_from_stats(fast["mean_ms"], sa, na, slow["mean_ms"], sb, nb, equal_var=False).pvalue
    )  # fmt: skip
    sigma = value * ((sa / fast["mean_ms"]) ** 2 + (sb / slow["mean_ms"]) ** 2) ** 0.5
    return stats.Comparison(fast["cell"], slow["cell"], stats.Ratio(value, sigma), p)


def _from_runs(winner: Pipeline, reference: Pipeline | None) -> stats.Comparison | None:
    mine, ref = _run_means(winner), _run_means(reference)
    if not mine or not ref:
        return None
    fast, slow = ((winner.name, mine), (REFERENCE, ref))
    if statistics.fmean(ref) < statistics.fmean(mine):
        fast, slow = slow, fast
    return stats.compare(fast[0], fast[1], slow[0], slow[1])


def _run_means(p: Pipeline | None) -> list[float]:
    """Per finished run, the pipeline's mean seconds per sample, as compare summarizes a cell."""
    from speechperf.compare.summary import summarize
    from speechperf.launch.cell import Cell

    ok = [r for r in (p.runs if p else []) if r.ok]
    if not ok:
        return []
    return list(summarize([Cell(ok[0].label, "-")], ok)[0].run_values)


def untried(state) -> str | None:
    """What the budget left untried, in one line."""
    rows = state.screening.rows.values() if state.screening else []
    left = [r.candidate.key for r in rows if r.status.startswith("not tried")]
    if not left:
        return None
    shown = ", ".join(left[:4]) + (f" and {len(left) - 4} more" if len(left) > 4 else "")
    return f"left untried when the budget ended: {len(left)} candidate(s): {shown}"


def best_so_far(state) -> str | None:
    """The best pipeline measured so far against the reference, with its σ, where no winner was judged."""
    measured = [p for p in state.pipelines if p.mean_s is not None]
    ref = state.reference
    ref_text = _ms(ref.mean_s, ref.stdev_s) if ref is not None and ref.mean_s is not None else "not measured"
    if measured:
        best = min(measured, key=lambda p: p.mean_s)
        return f"best measured so far: {best.name} {_ms(best.mean_s, best.stdev_s)} ({best.status}) against the " \
               f"reference's {ref_text}"  # fmt: skip
    rows = [r for r in (state.screening.rows.values() if state.screening else []) if r.mean is not None
            and not r.status.startswith(("dropped", "failed"))]  # fmt: skip
    if not rows:
        return None
    best = min(rows, key=lambda r: r.mean)
    times = best.times
    sigma = statistics.stdev(times) if len(times) > 1 else None
    return (
        f"best measured so far (screened alone, rung {best.rung}, quality not judged end to end): "
        f"{best.candidate.key} {_ms(statistics.fmean(times) if times else best.mean, sigma)} per sample on "
        f"{_samples(best.rung)}; the reference run whole: {ref_text}"
    )


def _ms(mean_s: float | None, sigma_s: float | None) -> str:
    if mean_s is None:
        return "-"
    sigma = "" if sigma_s is None else f" ± {sigma_s * 1e3:.1f}"
    return f"{mean_s * 1e3:.1f}{sigma} ms"


def _samples(rung: int) -> str:
    return "the first rung's sample" if rung == 1 else "the whole dataset"


def no_winner(state) -> str:
    if not any(p.runs for p in state.pipelines):
        return "no winner judged: the budget ended before a pipeline ran whole"
    return "no winner: every pipeline run whole was over the quality budget or failed"


def lines(state) -> list[str]:
    """The winner (or the reference, or what is known), the processes and the final compare: the console's last
    lines, the Markdown's and the HTML's last section."""
    if state.nothing:
        return [state.nothing]
    out = []
    verdict = state.verdict
    if state.winner is not None and verdict is not None and verdict["answer"] == "reference":
        out.append(f"answer: the reference (all default) stays: {verdict['sentence']}: a tie, not a win; "
                   f"{state.winner_config or ''} runs the reference, tied.yaml beside it the tied pipeline")  # fmt: skip
    elif state.winner is not None:
        w, ref = state.winner, state.reference
        against = f" against the reference's {_ms(ref.mean_s, ref.stdev_s)}" if ref and ref.mean_s else ""
        out.append(f"winner: {w.name}: {_ms(w.mean_s, w.stdev_s)}{against}: "
                   f"{state.winner_config or '(config not written)'}")  # fmt: skip
        if verdict is not None:
            out.append(f"{verdict['from']}: {verdict['sentence']}")
    else:
        out.append(no_winner(state))
        best = best_so_far(state)
        if best:
            out.append(best)
    left = untried(state)
    if left:
        out.append(left)
    runner = state.runner
    if runner is not None:
        out.append(f"processes: {runner.ran} run, {runner.reused} reused from an earlier run of this tune; "
                   f"{state.budget.elapsed:.0f} s of the {_budget_s(state):.0f} s budget")  # fmt: skip
    if state.final:
        out += state.final.get("left_out") or []
        out += state.final.get("sentences") or [state.final.get("skipped", "")]
        out.append(state.final.get("quality_vs_fp32") or "")
    return [line for line in out if line]


def _budget_s(state) -> float:
    """--budget: the serving phases' deadline with --objective server (the pipelines' phases have a share of it)."""
    return state.serving.deadline.seconds if state.serving is not None else state.opts.budget_s
