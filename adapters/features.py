"""80-dim log-mel filterbank features in numpy, the same on every backend (Kaldi-style ``fbank``).

16 kHz audio, 25 ms windows (400 samples) every 10 ms (160 samples), Kaldi's ``snip_edges`` framing: a signal of
``n`` samples gives ``1 + (n - 400) // 160`` frames (none under 400 samples). Each frame: remove DC, pre-emphasis
0.97, Povey window, 512-point power spectrum, triangular filters equally spaced on the mel scale
(``1127 ln(1 + f / 700)``) from 20 Hz to Nyquist, natural log with a floor. No dither, so features are
deterministic. ``normalize=True`` applies utterance-level mean/variance normalisation, as fairseq's S2T recipes do.
"""

from __future__ import annotations

import numpy as np

from speechperf.errors import FeedError

SAMPLE_RATE = 16000
NUM_MEL_BINS = 80
FRAME_LENGTH_MS = 25.0
FRAME_SHIFT_MS = 10.0
LOW_FREQ = 20.0
PREEMPHASIS = 0.97
_LOG_FLOOR = np.finfo(np.float32).eps


def frame_sizes(sample_rate: int = SAMPLE_RATE) -> tuple[int, int]:
    """(window, hop) in samples."""
    return int(sample_rate * FRAME_LENGTH_MS / 1000), int(sample_rate * FRAME_SHIFT_MS / 1000)


def num_frames(num_samples: int, sample_rate: int = SAMPLE_RATE) -> int:
    window, hop = frame_sizes(sample_rate)
    return 0 if num_samples < window else 1 + (num_samples - window) // hop


def mel(freq: np.ndarray | float) -> np.ndarray | float:
    return 1127.0 * np.log(1.0 + np.asarray(freq) / 700.0)


def mel_filterbank(
    num_bins: int = NUM_MEL_BINS, n_fft: int = 512, sample_rate: int = SAMPLE_RATE, low_freq: float = LOW_FREQ
) -> np.ndarray:
    """(num_bins, n_fft // 2 + 1) triangular filters, equally spaced on the mel scale (Kaldi's construction)."""
    nyquist = sample_rate / 2
    edges = np.linspace(mel(low_freq), mel(nyquist), num_bins + 2)
    left, center, right = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    fft_mel = mel(np.arange(n_fft // 2 + 1) * sample_rate / n_fft)[None, :]
    up = (fft_mel - left) / (center - left)
    down = (right - fft_mel) / (right - center)
    return np.maximum(0.0, np.minimum(up, down)).astype(np.float32)


def _povey_window(length: int) -> np.ndarray:
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / (length - 1))) ** 0.85


def fbank(
    waveform: np.ndarray,
    sample_rate: int = SAMPLE_RATE,
    num_mel_bins: int = NUM_MEL_BINS,
    normalize: bool = False,
) -> np.ndarray:
    """Log-mel filterbank (frames, num_mel_bins) float32 of a mono waveform (float, about [-1, 1])."""
    waveform = np.asarray(waveform)
    if waveform.ndim != 1:
        raise FeedError(f"waveform has shape {waveform.shape}; expected a mono signal of shape (samples,)")
    window, hop = frame_sizes(sample_rate)
    frames = num_frames(len(waveform), sample_rate)
    if frames == 0:
        raise FeedError(
            f"waveform has {len(waveform)} samples; at least {window} ({FRAME_LENGTH_MS:g} ms at {sample_rate} Hz) "
            "are needed for one frame"
        )
    signal = waveform.astype(np.float64)
    index = np.arange(window)[None, :] + hop * np.arange(frames)[:, None]
    x = signal[index]
    x = x - x.mean(axis=1, keepdims=True)
    x = np.concatenate([x[:, :1] * (1 - PREEMPHASIS), x[:, 1:] - PREEMPHASIS * x[:, :-1]], axis=1)
    x = x * _povey_window(window)
    n_fft = 1 << (window - 1).bit_length()
    power = np.abs(np.fft.rfft(x, n=n_fft)) ** 2
    energies = power @ mel_filterbank(num_mel_bins, n_fft, sample_rate).T.astype(np.float64)
    features = np.log(np.maximum(energies, _LOG_FLOOR))
    if normalize:
        features = (features - features.mean(axis=0)) / np.maximum(features.std(axis=0), 1e-5)
    return features.astype(np.float32)


def batch_fbank(waveforms: list[np.ndarray], sample_rate: int = SAMPLE_RATE, normalize: bool = False):
    """Features of several waveforms, zero-padded to the longest: (features (batch, frames, bins), lengths int64)."""
    if not waveforms:
        raise FeedError("no waveforms given; at least one is needed")
    feats = [fbank(w, sample_rate, normalize=normalize) for w in waveforms]
    lengths = np.array([len(f) for f in feats], dtype=np.int64)
    out = np.zeros((len(feats), int(lengths.max()), feats[0].shape[1]), dtype=np.float32)
    for i, f in enumerate(feats):
        out[i, : len(f)] = f
    return out, lengths
