"""The linear STFT front-end of speech-enhancement models, and the resynthesis of their masks, in numpy / scipy.

A mask-based enhancer (NSNet2, DeepFilterNet- and RNNoise-style models) takes the linear spectrogram of the noisy
speech (``n_fft // 2 + 1`` bins a frame, often the log10 of the power) and puts out a gain per bin and frame; the
enhanced speech is the noisy STFT times that gain, turned back into a waveform by the inverse STFT (overlap-add with
the same window). Both directions are scipy's ``ShortTimeFFT``: frames centred every ``hop_length`` samples from
sample 0 (``1 + n // hop_length`` frames for ``n`` samples), the signal zero-padded at its ends, the window
(``win_length`` samples, periodic) zero-padded to ``n_fft``; its inverse uses the dual window, so an all-ones mask
gives back the input to rounding error. The same settings make the features and invert the masked spectrum, so the
two cannot disagree.
"""

from __future__ import annotations

import numpy as np

from speechperf.adapters.features import WINDOWS
from speechperf.errors import FeedError

#: What a linear spectrogram holds per bin: ``|X| ** power`` (1 magnitude, 2 power), then ``log`` of it floored at
#: ``clamp`` (``none``: no log).
LOGS = ("ln", "log10", "none")


def _transform(n_fft: int, win_length: int, hop_length: int, window: str, sample_rate: int):
    from scipy.signal import ShortTimeFFT

    if win_length > n_fft:
        raise FeedError(f"win_length {win_length} is longer than n_fft {n_fft}; it must be <= n_fft")
    return ShortTimeFFT(WINDOWS[window](win_length), hop=hop_length, fs=sample_rate, mfft=n_fft)


def stft(
    waveform: np.ndarray,
    n_fft: int = 320,
    win_length: int = 320,
    hop_length: int = 160,
    window: str = "hann",
    sample_rate: int = 16000,
) -> np.ndarray:
    """The complex STFT (frames, n_fft // 2 + 1) of a mono waveform."""
    waveform = np.asarray(waveform)
    if waveform.ndim != 1 or waveform.size == 0:
        raise FeedError(f"waveform has shape {waveform.shape}; expected a mono signal of shape (samples,)")
    transform = _transform(n_fft, win_length, hop_length, window, sample_rate)
    return transform.stft(waveform.astype(np.float64)).T


def istft(
    spectrum: np.ndarray,
    samples: int,
    n_fft: int = 320,
    win_length: int = 320,
    hop_length: int = 160,
    window: str = "hann",
    sample_rate: int = 16000,
) -> np.ndarray:
    """The waveform (``samples`` long, float32) whose STFT, with these settings, is ``spectrum`` (frames, bins):
    overlap-add with the dual of the analysis window."""
    transform = _transform(n_fft, win_length, hop_length, window, sample_rate)
    return transform.istft(np.asarray(spectrum).T, k1=samples).astype(np.float32)


def linear_spectrogram(
    waveform: np.ndarray,
    n_fft: int = 320,
    win_length: int = 320,
    hop_length: int = 160,
    window: str = "hann",
    power: float = 2.0,
    log: str = "log10",
    clamp: float = 1e-12,
    normalize: str = "none",
    sample_rate: int = 16000,
) -> np.ndarray:
    """(frames, n_fft // 2 + 1) float32: ``|X| ** power`` of the STFT, then ``log(max(x, clamp))`` unless ``log`` is
    ``none``, then ``normalize`` (``utterance``: mean / variance per bin)."""
    magnitude = np.abs(stft(waveform, n_fft, win_length, hop_length, window, sample_rate))
    values = magnitude**2 if power == 2 else magnitude**power
    if log != "none":
        values = (np.log if log == "ln" else np.log10)(np.maximum(values, clamp))
    if normalize == "utterance":
        values = (values - values.mean(axis=0)) / np.maximum(values.std(axis=0), 1e-5)
    elif normalize != "none":
        raise FeedError(f"normalize {normalize!r} does not apply to a linear spectrogram; allowed: none, utterance")
    return values.astype(np.float32)


def apply_mask(
    waveform: np.ndarray,
    mask: np.ndarray,
    n_fft: int = 320,
    win_length: int = 320,
    hop_length: int = 160,
    window: str = "hann",
    sample_rate: int = 16000,
) -> np.ndarray:
    """The enhanced waveform: ``waveform``'s STFT times ``mask`` (frames, bins; real gains or complex), inverted,
    as long as ``waveform``."""
    waveform = np.asarray(waveform)
    spectrum = stft(waveform, n_fft, win_length, hop_length, window, sample_rate)
    if np.shape(mask) != spectrum.shape:
        raise FeedError(
            f"mask has shape {list(np.shape(mask))}; the noisy STFT it applies to has {list(spectrum.shape)} "
            "(frames, bins)"
        )
    return istft(spectrum * mask, waveform.size, n_fft, win_length, hop_length, window, sample_rate)
