"""Discrete units in numpy: nearest-centroid k-means assignment and de-duplication, the same on every backend.

The codebook is part of the unit extractor's artifacts (``unit_extractor/codebook.npy``, (units, dim) float32).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speechperf.errors import FeedError, ModelFileError


def load_codebook(path: Path) -> np.ndarray:
    try:
        codebook = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"cannot read codebook {path}: {exc}") from None
    if codebook.ndim != 2:
        raise ModelFileError(f"codebook {path} has shape {codebook.shape}; expected (units, dim)")
    return codebook.astype(np.float32, copy=False)


def assign(features: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid (squared Euclidean) for each frame: (..., dim) -> (...) int64.

    ``|x - c|^2 = |x|^2 - 2 x.c + |c|^2``; ``|x|^2`` is the same for every centroid, so it is left out. Computed
    in float64 so that near-ties resolve the same way whatever backend produced the (float32) features.
    """
    features = np.asarray(features)
    if features.shape[-1] != codebook.shape[1]:
        raise FeedError(
            f"features have dimension {features.shape[-1]}; the codebook's centroids have {codebook.shape[1]}"
        )
    flat = features.reshape(-1, features.shape[-1]).astype(np.float64)
    cb = codebook.astype(np.float64)
    distances = (cb * cb).sum(axis=1)[None, :] - 2.0 * flat @ cb.T
    return distances.argmin(axis=1).reshape(features.shape[:-1]).astype(np.int64)


def assign_batch(features: np.ndarray, lengths: np.ndarray, codebook: np.ndarray) -> list[np.ndarray]:
    """Units per item of a padded batch (batch, frames, dim), cut to each item's length."""
    units = assign(features, codebook)
    return [row[: int(n)] for row, n in zip(units, lengths)]


def deduplicate(units: np.ndarray) -> np.ndarray:
    """Collapse runs of the same unit into one (``1 1 5 5 5 2`` -> ``1 5 2``), as unit-based S2ST does."""
    units = np.asarray(units)
    if units.size == 0:
        return units.copy()
    keep = np.ones(len(units), dtype=bool)
    keep[1:] = units[1:] != units[:-1]
    return units[keep]


#: Fewest samples the unit extractor's conv stack turns into one frame (its receptive field; speechperf.zoo).
MIN_SAMPLES = 400


def batch_waveforms(waveforms: list[np.ndarray], min_samples: int = MIN_SAMPLES):
    """Zero-padded (batch, samples) float32 and int64 lengths for the unit extractor's ``waveform`` input."""
    if not waveforms:
        raise FeedError("no waveforms given; at least one is needed")
    for i, w in enumerate(waveforms):
        if np.ndim(w) != 1:
            raise FeedError(f"waveform {i} has shape {np.shape(w)}; expected a mono signal of shape (samples,)")
        if len(w) < min_samples:
            raise FeedError(
                f"waveform {i} has {len(w)} samples; the unit extractor needs at least {min_samples} for one frame"
            )
    lengths = np.array([len(w) for w in waveforms], dtype=np.int64)
    batch = np.zeros((len(waveforms), int(lengths.max())), dtype=np.float32)
    for i, w in enumerate(waveforms):
        batch[i, : len(w)] = w
    return batch, lengths


def extract_units(encoder, waveforms: list[np.ndarray], codebook: np.ndarray, dedup: bool = False) -> list[np.ndarray]:
    """Units of each waveform: the unit extractor's ``encoder`` session, then nearest-centroid assignment."""
    waveform, lengths = batch_waveforms(waveforms)
    out = encoder({"waveform": waveform, "waveform_lengths": lengths})
    units = assign_batch(out["features"], out["feature_lengths"], codebook)
    return [deduplicate(u) for u in units] if dedup else units
