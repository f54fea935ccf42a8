"""The quality of each cell's outputs (the quality meter of its bench children), and which backend's differs.

Each child ``speechperf bench`` scores its own outputs when the dataset has references (``result.quality`` of its
JSON; speechperf.meters.quality). A cell's quality is its first finished run's (decoding is deterministic, so runs
of one cell agree; a cell whose runs disagree says so). Within a group of cells that differ only by backend, a cell
whose headline figure (WER, BLEU / ASR-BLEU, or VAD agreement, in points) is not the reference cell's is flagged: a
speed-up that changed the transcripts is not the same model run faster.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import attrs

from speechperf.launch.result import RunResult

#: Figures are compared at the precision they are printed with (0.01 points): equal transcripts score equal.
TOLERANCE_POINTS = 0.005


@attrs.frozen
class CellQuality:
    label: str
    headline: str | None  # the run's (total) score as bench prints it
    metric: str | None  # "WER", "BLEU", "ASR-BLEU", "agreement"
    value: float | None  # in points
    reference: str | None = None  # the cell it was compared with
    differs: str | None = None  # how it differs from the reference, when it does
    note: str | None = None  # e.g. runs of this cell disagree

    def describe(self) -> str:
        return " ".join(p for p in (self.headline, f"[{self.differs}]" if self.differs else None) if p) or "-"


def primary(score: dict) -> tuple[str, float] | None:
    """The headline figure of a QualityScore as the bench JSON holds it (see QualityScore.primary)."""
    metric = score.get("metric")
    if metric in ("bleu", "asr-bleu") and score.get("bleu") is not None:
        return ("ASR-BLEU" if metric == "asr-bleu" else "BLEU"), float(score["bleu"])
    if score.get("wer") is not None:
        return "WER", 100 * float(score["wer"])
    if score.get("agreement") is not None:
        return "agreement", 100 * float(score["agreement"])
    return None


def _total(result: RunResult) -> dict | None:
    try:
        data = json.loads(Path(result.json_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    quality = (data.get("result") or {}).get("quality") or {}
    return next((s for s in quality.get("scores", []) if s.get("stage") == "total"), None)


def _score(score: dict):
    """The ``total`` score of a bench JSON as a speechperf.meters.quality.QualityScore (without its samples)."""
    from speechperf.meters.quality import QualityScore
    from speechperf.meters.speech_quality import SpeechQuality

    def build(cls, data: dict):
        fields = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields and k not in ("per_sample", "speech")})

    speech = build(SpeechQuality, score["speech"]) if score.get("speech") else None
    return attrs.evolve(build(QualityScore, score), speech=speech)


def _headline(score: dict) -> str:
    return _score(score).headline()


def total_score(result: RunResult):
    """The run's ``total`` quality score (a QualityScore), or None where it scored none."""
    found = _total(result) if result.ok else None
    return None if found is None else _score(found)


def cell_quality(label: str, results: Sequence[RunResult]) -> CellQuality | None:
    scores = [s for r in results if r.ok and r.label == label for s in [_total(r)] if s is not None]
    if not scores:
        return None
    figures = [primary(s) for s in scores]
    first = figures[0]
    note = None
    if first and any(f is None or abs(f[1] - first[1]) > TOLERANCE_POINTS for f in figures[1:]):
        note = f"runs disagree: {first[0]} " + ", ".join("-" if f is None else f"{f[1]:.2f}" for f in figures)
    metric, value = first if first else (None, None)
    return CellQuality(label, _headline(scores[0]), metric, value, note=note)


def group_quality(labels: Sequence[str], results: Sequence[RunResult]) -> dict[str, CellQuality]:
    """Each cell's quality; with a reference (the group's first cell with a score), whether it differs."""
    found = {label: q for label in labels if (q := cell_quality(label, results)) is not None}
    if not found:
        return {}
    reference = next(iter(found.values()))
    out = {}
    for label, q in found.items():
        differs = None
        if label != reference.label and q.value is not None and reference.value is not None:
            if q.metric != reference.metric or abs(q.value - reference.value) > TOLERANCE_POINTS:
                differs = (
                    f"DIFFERS from {reference.label}: {q.metric} {q.value:.2f} vs {reference.value:.2f}"
                    f" ({q.value - reference.value:+.2f} points)"
                )
        out[label] = attrs.evolve(q, reference=reference.label, differs=differs)
    return out
