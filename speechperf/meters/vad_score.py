"""How well VAD segments agree with reference segments: frame agreement and segment F1.

- Frame agreement: the fraction of 32 ms windows (the silero hop) that both call speech or both call silence, over
  the whole dataset (windows summed over clips, so a long clip weighs more than a short one).
- Segment F1: a predicted segment matches a reference segment when their intersection over union is at least 0.5
  (each matched once, best overlap first); precision is matched / predicted, recall matched / reference. A clip
  with no reference and no predicted segment counts as fully right.

Also used by ``speechperf optimize`` to compare a variant's segments with fp32's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

VAD_WINDOW_S = 512 / 16000
MATCH_IOU = 0.5

Segments = Sequence[Sequence[float]]


@attrs.frozen
class VadScore:
    agreement: float
    segment_f1: float
    precision: float
    recall: float
    windows: int
    reference_segments: int
    predicted_segments: int


def vad_decisions(segments: Segments, seconds: float) -> np.ndarray:
    """Speech (True) or not per 32 ms window of a clip, from its speech segments."""
    centres = (np.arange(max(1, math.ceil(seconds / VAD_WINDOW_S))) + 0.5) * VAD_WINDOW_S
    speech = np.zeros(centres.shape, dtype=bool)
    for start, end in segments:
        speech |= (centres >= start) & (centres < end)
    return speech


def frame_agreement(
    reference: Mapping[str, Segments], predicted: Mapping[str, Segments], seconds: Mapping[str, float]
) -> tuple[float | None, int]:
    """(agreement, windows compared) over the clips present in all three mappings."""
    same = total = 0
    for sid, segs in reference.items():
        if sid not in predicted or sid not in seconds:
            continue
        a, b = vad_decisions(segs, seconds[sid]), vad_decisions(predicted[sid], seconds[sid])
        same += int((a == b).sum())
        total += a.size
    return (same / total if total else None), total


def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else 0.0


def matched_segments(reference: Segments, predicted: Segments) -> int:
    pairs = sorted(((_iou(r, p), i, j) for i, r in enumerate(reference) for j, p in enumerate(predicted)), reverse=True)
    used_r, used_p = set(), set()
    for iou, i, j in pairs:
        if iou < MATCH_IOU:
            break
        if i not in used_r and j not in used_p:
            used_r.add(i)
            used_p.add(j)
    return len(used_r)


def score(
    reference: Mapping[str, Segments], predicted: Mapping[str, Segments], seconds: Mapping[str, float]
) -> VadScore | None:
    agreement, windows = frame_agreement(reference, predicted, seconds)
    if agreement is None:
        return None
    ids = [sid for sid in reference if sid in predicted and sid in seconds]
    n_ref = sum(len(reference[s]) for s in ids)
    n_pred = sum(len(predicted[s]) for s in ids)
    matched = sum(matched_segments(reference[s], predicted[s]) for s in ids)
    precision = matched / n_pred if n_pred else float(n_ref == 0)
    recall = matched / n_ref if n_ref else float(n_pred == 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return VadScore(agreement, f1, precision, recall, windows, n_ref, n_pred)
