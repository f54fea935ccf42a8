"""How sure a quality verdict is: a paired bootstrap over utterances, and what the dataset can resolve at all.

A WER difference between two systems on one test set is reported in the ASR field with a confidence interval from
a paired bootstrap over utterances (Bisani & Ney, 2004: resample the utterances with replacement, both systems on
the same draw, and read the spread of the difference). Here the statistic is the candidate's WER less the
reference's, in points, from each utterance's word errors and reference words (the bench JSON keeps them per
sample: ``quality.scores[].per_sample[].errors / words``); for BLEU, the mean sentence BLEU's drop. A pipeline is
over the quality budget only where the interval's lower end is past it: the data shows the loss. Where the point
estimate is past the budget but the interval reaches below it, the verdict says so and the pipeline stays in.

On a small set one error moves WER by 100/N points for N reference words: a budget finer than that cannot be
judged (the issue's 20-word set: one error is 5 points against a 1-point budget), and tune says so at the start.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

#: Bootstrap draws and the confidence level of the interval.
DRAWS = 2000
CONFIDENCE = 0.95
SEED = 0


@attrs.frozen
class Delta:
    """The candidate's loss against the reference in points (positive: worse), with its bootstrap interval."""

    metric: str  # "WER" or "BLEU"
    points: float
    low: float | None  # None: too few utterances to resample
    high: float | None
    utterances: int

    def shown_over(self, budget: float) -> bool:
        """The data shows the loss past ``budget``: the interval's lower end is past it (no interval: the point)."""
        return (self.low if self.low is not None else self.points) > budget

    def text(self) -> str:
        sign = 1 if self.metric == "WER" else -1  # WER rises, BLEU drops: written as the score's own change
        change = f"{self.metric} {sign * self.points:+.1f} points"
        if self.low is None or self.high is None:
            return f"{change} ({self.utterances} utterance(s): no interval)"
        lo, hi = sorted((sign * self.low, sign * self.high))
        return f"{change}, {CONFIDENCE:.0%} CI {lo:+.1f} to {hi:+.1f}"


def paired_bootstrap(loss: Sequence[Sequence[float]], weights: Sequence[float] | None = None):
    """The interval of ``sum(loss[i]) / sum(weights[i]) * 100`` (or the mean of loss, without weights) over
    utterances drawn with replacement; ``loss`` is per utterance (candidate less reference). Returns (low, high),
    or (None, None) with fewer than 2 utterances."""
    import numpy as np

    values = np.asarray(loss, dtype=float)
    n = len(values)
    if n < 2:
        return None, None
    draws = np.random.default_rng(SEED).integers(0, n, size=(DRAWS, n))
    if weights is None:
        stats = values[draws].mean(axis=1)
    else:
        w = np.asarray(weights, dtype=float)
        stats = 100.0 * values[draws].sum(axis=1) / np.maximum(w[draws].sum(axis=1), 1e-12)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


def utterances(json_path: str) -> list[dict]:
    """The per-utterance scores of a bench JSON's ``total`` quality score (id, errors, words, bleu)."""
    import json
    from pathlib import Path

    try:
        data = json.loads(Path(json_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    quality = (data.get("result") or {}).get("quality") or {}
    total = next((s for s in quality.get("scores") or [] if s.get("stage") == "total"), None) or {}
    return list(total.get("per_sample") or [])


def wer_delta(reference: Sequence[dict], candidate: Sequence[dict]) -> Delta | None:
    """The candidate's WER less the reference's (points), paired over the utterances both scored."""
    ref = {s["id"]: s for s in reference if s.get("errors") is not None and s.get("words")}
    mine = {s["id"]: s for s in candidate if s.get("errors") is not None}
    ids = [i for i in ref if i in mine]
    if not ids:
        return None
    loss = [mine[i]["errors"] - ref[i]["errors"] for i in ids]
    words = [ref[i]["words"] for i in ids]
    low, high = paired_bootstrap(loss, words)
    return Delta("WER", 100.0 * sum(loss) / sum(words), low, high, len(ids))


def bleu_delta(reference: Sequence[dict], candidate: Sequence[dict]) -> Delta | None:
    """The reference's mean sentence BLEU less the candidate's (positive: the candidate lost), paired."""
    ref = {s["id"]: s["bleu"] for s in reference if s.get("bleu") is not None}
    mine = {s["id"]: s["bleu"] for s in candidate if s.get("bleu") is not None}
    ids = [i for i in ref if i in mine]
    if not ids:
        return None
    loss = [ref[i] - mine[i] for i in ids]
    low, high = paired_bootstrap(loss)
    return Delta("BLEU", sum(loss) / len(loss), low, high, len(ids))


def resolution_note(words: int, max_wer_increase: float | None) -> str | None:
    """One line where the dataset cannot resolve the WER budget: one error moves WER by more than the budget."""
    if not words or max_wer_increase is None:
        return None
    step = 100.0 / words
    if step <= max_wer_increase:
        return None
    return (
        f"quality budget finer than the dataset resolves: with {words} reference words one error is "
        f"{step:.1f} WER points, more than --max-wer-increase {max_wer_increase:g}; a pipeline is ruled over it "
        f"only where a paired bootstrap over the utterances shows the loss ({CONFIDENCE:.0%} interval)"
    )
