"""VITS length regulation and noise in numpy (Piper; ``speechperf.zoo.piper``), the same on every backend.

VITS predicts a log-duration per token; the frames of a token are ``ceil(exp(logw) * mask * length_scale)``
(float32, as Piper's graph computes it), and a sequence has at least one frame. The prior's statistics [B, C, T] are
repeated along time by those counts (``speechperf.adapters.length.regulate``), which is what VITS's monotonic
alignment path does with a matrix product.

The noises VITS samples (the duration predictor's [B, 2, T] and the prior's [B, C, F]) are drawn here from a numpy
generator, time-major (frame after frame), so a shorter draw is a prefix of a longer one from the same seed: the
noise of F frames does not depend on how many frames a longer draw would have had.
"""

from __future__ import annotations

import numpy as np

from speechperf.adapters.length import regulate


def durations(log_durations: np.ndarray, lengths: np.ndarray, length_scale: float = 1.0) -> np.ndarray:
    """Frames per token [B, T] (int64) from VITS's log-durations [B, T]; padding (past ``lengths``) gets 0."""
    log_durations = np.asarray(log_durations, dtype=np.float32)
    mask = (np.arange(log_durations.shape[1])[None, :] < np.asarray(lengths)[:, None]).astype(np.float32)
    # Clip before exp so a wild prediction cannot overflow (e^20 frames is past any real utterance).
    frames = np.ceil(np.exp(np.clip(log_durations, -20.0, 20.0)) * mask * np.float32(length_scale)).astype(np.int64)
    empty = frames.sum(axis=1) == 0
    frames[empty, 0] = 1  # VITS clamps the length to at least one frame
    return frames


def regulate_channels(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[B, C, T] repeated along T by ``counts`` [B, T] -> ([B, C, F] zero-padded, frames per item [B])."""
    out, frames = regulate(np.asarray(values).transpose(0, 2, 1), counts)
    return np.ascontiguousarray(out.transpose(0, 2, 1)), frames


def noise(rng: np.random.Generator, batch: int, channels: int, length: int) -> np.ndarray:
    """Standard normal [batch, channels, length] float32, drawn time-major (a prefix of any longer draw)."""
    return np.ascontiguousarray(rng.standard_normal((batch, length, channels), dtype=np.float32).transpose(0, 2, 1))


def synthesize(
    encoder,
    decoder,
    tokens: np.ndarray,
    rng: np.random.Generator,
    *,
    channels: int,
    noise_w: float,
    noise_scale: float,
    length_scale: float,
) -> tuple[np.ndarray, int]:
    """One utterance (``tokens`` [T] phoneme ids) through the ``encoder`` and ``decoder`` sessions of a VITS model
    split as ``speechperf.zoo.piper`` is: the duration noise, then the latent noise, both from ``rng``. Returns the
    waveform (1-d) and its frame count."""
    tokens = np.asarray(tokens, dtype=np.int64)[None]
    lengths = np.array([tokens.shape[1]], dtype=np.int64)
    encoded = encoder(
        {
            "tokens": tokens,
            "token_lengths": lengths,
            "duration_noise": noise(rng, 1, 2, tokens.shape[1]) * np.float32(noise_w),
        }
    )
    counts = durations(encoded["log_durations"], lengths, length_scale)
    means, frames = regulate_channels(encoded["means"], counts)
    log_scales, _ = regulate_channels(encoded["log_scales"], counts)
    latent = noise(rng, 1, channels, means.shape[2]) * np.float32(noise_scale)
    waveform = decoder({"means": means, "log_scales": log_scales, "latent_noise": latent, "frame_lengths": frames})
    return np.asarray(waveform["waveform"]).reshape(-1), int(frames[0])
