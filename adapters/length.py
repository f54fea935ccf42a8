"""Length regulation: predicted log-durations to integer repeat counts, then repeat hidden states along time.

Shared by the TTS acoustic model (encoder -> regulate -> decoder) and the unit vocoder (duration -> repeat units ->
generator). It runs in numpy between two sessions, so every backend regulates the same way and an exported graph
never holds a data-dependent output length.

Durations follow FastSpeech2 (ming024) and fairseq's CodeHiFiGAN: the predictor is trained on ``log(d + 1)``, so
``d = round(exp(log_d) - 1)``, then clamped to at least ``min_duration`` (1: every token is heard, as fairseq clamps
unit durations). With random weights a duration can be huge, so the total per sequence is bounded by ``max_total``:
frames beyond the bound are taken from the end of the sequence, keeping its start intact.
"""

from __future__ import annotations

import numpy as np

from speechperf.errors import FeedError, SpeechperfError


def durations_from_log(
    log_durations: np.ndarray,
    *,
    scale: float = 1.0,
    min_duration: int = 1,
    max_total: int | None = None,
    lengths: np.ndarray | None = None,
) -> np.ndarray:
    """Integer durations [batch, tokens] (int64) from predicted log-durations [batch, tokens].

    ``scale`` stretches speech (FastSpeech2's duration control; 1.0 leaves it). ``lengths`` [batch] marks the real
    tokens of a padded batch: padding gets duration 0. ``max_total`` bounds the frames per sequence.
    """
    log_durations = np.asarray(log_durations)
    if log_durations.ndim != 2:
        raise FeedError(f"log_durations has shape {log_durations.shape}; expected [batch, tokens]")
    if scale <= 0:
        raise SpeechperfError(f"duration scale is {scale}; it must be > 0")
    if min_duration < 0:
        raise SpeechperfError(f"min_duration is {min_duration}; it must be >= 0")
    # Clip before exp so a wild random-weight prediction cannot overflow; 20 is e^20 frames, far past any bound.
    raw = np.exp(np.clip(log_durations.astype(np.float64), -20.0, 20.0)) - 1.0
    durations = np.maximum(np.round(raw * scale), min_duration).astype(np.int64)
    if lengths is not None:
        lengths = np.asarray(lengths)
        if lengths.shape != (durations.shape[0],):
            raise FeedError(f"lengths has shape {lengths.shape}; expected ({durations.shape[0]},), one per sequence")
        durations[np.arange(durations.shape[1])[None, :] >= lengths[:, None]] = 0
    if max_total is not None:
        durations = bound_durations(durations, max_total)
    return durations


def bound_durations(durations: np.ndarray, max_total: int) -> np.ndarray:
    """Cut each row of ``durations`` so it sums to at most ``max_total``, taking frames from the end."""
    if max_total < 1:
        raise SpeechperfError(f"max_total is {max_total}; it must be >= 1")
    ends = np.minimum(np.cumsum(durations, axis=1), max_total)
    starts = np.concatenate([np.zeros_like(ends[:, :1]), ends[:, :-1]], axis=1)
    return (ends - starts).astype(np.int64)


def regulate(values: np.ndarray, durations: np.ndarray, pad_value=0) -> tuple[np.ndarray, np.ndarray]:
    """Repeat ``values`` [batch, tokens, ...] along axis 1 by ``durations`` [batch, tokens].

    Returns the regulated array [batch, frames, ...], padded with ``pad_value`` to the longest sequence, and the
    frame count of each sequence [batch] (int64). Works for hidden states (float) and unit ids (int).
    """
    values = np.asarray(values)
    durations = np.asarray(durations)
    if values.shape[:2] != durations.shape:
        raise FeedError(f"durations have shape {durations.shape}; values have {values.shape}: the first two must match")
    if durations.size and durations.min() < 0:
        raise FeedError(f"durations contain {int(durations.min())}; durations must be >= 0")
    frames = durations.sum(axis=1).astype(np.int64)
    total = int(frames.max()) if frames.size else 0
    if total == 0:
        raise FeedError("durations sum to 0 frames for every sequence; nothing to decode (min_duration must be >= 1)")
    out = np.full((values.shape[0], total, *values.shape[2:]), pad_value, dtype=values.dtype)
    for row, (value, duration) in enumerate(zip(values, durations)):
        out[row, : frames[row]] = np.repeat(value, duration, axis=0)
    return out, frames
