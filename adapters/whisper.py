"""Whisper in numpy around three sessions (``encoder``, ``cross_kv``, ``decoder_step`` of ``speechperf.zoo.whisper``):
its log-mel input, greedy decoding with the decoder's KV cache, and detokenization. Shared by every backend, so the
same weights transcribe identically on torch, paddle and onnxruntime.

Features are OpenAI Whisper's: 16 kHz audio padded or cut to 30 s, a periodic Hann window of 400 samples every
160 (centred, reflect padding), the power spectrum through 80 Slaney-style mel filters (0-8 kHz, Slaney area
normalisation, as librosa's default), log10 with a 1e-10 floor, clamped to 8 below the maximum, then
(x + 4) / 4. The wheel ships no mel filters, so they are computed here, by the shared front-end of
``speechperf.adapters.features`` (``FEATURES`` below are its settings).

Decoding is greedy from Whisper's prompt: ``<|startoftranscript|><|notimestamps|>`` for an English-only model;
``<|startoftranscript|><|pt|><|transcribe|><|notimestamps|>`` (or ``<|translate|>``: any language to English text)
for a multilingual one, whose special tokens are read from the ``added_tokens`` of the model's ``tokenizer.json``.
Without a language, a multilingual model detects it as Whisper does: one decoder step after
``<|startoftranscript|>``, the most likely language token, and the prompt continues from that step's cache. Then
Whisper's token suppression (the model's ``suppress_ids`` at every step, blank and end-of-text at the first one, timestamp
tokens always, since no timestamps are asked for), bounded by ``max_tokens`` new tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.adapters import features
from speechperf.adapters.features import librosa_mel_filters
from speechperf.errors import FeedError, ModelFileError

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
CHUNK_SECONDS = 30
N_SAMPLES = CHUNK_SECONDS * SAMPLE_RATE  # 480000
N_FRAMES = N_SAMPLES // HOP  # 3000

StepFn = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


#: Whisper's front-end as settings of the shared ``speechperf.adapters.features.log_mel`` (its ``whisper`` preset,
#: which a stage's ``features: whisper`` also takes).
FEATURES = dict(features.PRESETS["whisper"][1], n_mels=N_MELS)


def mel_filters(n_mels: int = N_MELS, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) triangular filters on Slaney's mel scale, each scaled to unit area (2 / width)."""
    return librosa_mel_filters(n_mels, n_fft, sample_rate, 0.0, sample_rate / 2, "slaney").astype(np.float32)


def log_mel(audio: np.ndarray) -> np.ndarray:
    """Whisper's (80, 3000) float32 input for mono 16 kHz ``audio``, padded with silence or cut to 30 s."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1 or audio.size == 0:
        raise FeedError(f"audio has shape {audio.shape}; Whisper takes a non-empty mono 16 kHz signal (samples,)")
    return np.ascontiguousarray(features.log_mel(audio, **FEATURES).T)


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


TASKS = ("transcribe", "translate")
#: The smallest multilingual Whisper vocabulary (English-only ones have 51864 tokens).
MULTILINGUAL_VOCAB = 51865


@attrs.frozen
class WhisperVocabulary:
    """The model's tokens (``vocabulary.txt``, one per id, the byte-level BPE strings that ``tokenizer.json``'s
    vocabulary also holds, plus the timestamp tokens), its special tokens (``tokenizer.json``'s ``added_tokens``,
    where the folder has one) and decoding settings (``config.json``)."""

    tokens: tuple[str, ...] = attrs.field(repr=False)
    suppress_ids: tuple[int, ...] = attrs.field(repr=False)
    suppress_ids_begin: tuple[int, ...] = attrs.field(repr=False)
    special: Mapping[str, int] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_dir(cls, folder: str | Path) -> WhisperVocabulary:
        folder = Path(folder)
        try:
            tokens = tuple((folder / "vocabulary.txt").read_text(encoding="utf-8").splitlines())
            config = json.loads((folder / "config.json").read_text())
            special = {}
            if (folder / "tokenizer.json").is_file():
                added = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]
                special = {t["content"]: int(t["id"]) for t in added if t.get("special")}
            vocab = cls(tokens, tuple(config["suppress_ids"]), tuple(config["suppress_ids_begin"]), special)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelFileError(f"cannot read the Whisper vocabulary in {folder}: {exc}") from None
        wrong = {t: i for t, i in special.items() if i >= len(tokens) or tokens[i] != t}
        if wrong:
            raise ModelFileError(
                f"{folder}: tokenizer.json's special tokens {wrong} are not at those ids in vocabulary.txt"
            )
        return vocab

    def id(self, token: str) -> int:
        if token in self.special:
            return self.special[token]
        return self.tokens.index(token)

    @property
    def multilingual(self) -> bool:
        """OpenAI's test: an English-only vocabulary (GPT-2's, 51864 with Whisper's specials) also has language
        and task tokens, but the model was never trained on them."""
        return len(self.tokens) >= MULTILINGUAL_VOCAB

    @property
    def language_ids(self) -> dict[str, int]:
        """Language code -> its token (``<|pt|>``): the tokens between ``<|startoftranscript|>`` and
        ``<|translate|>`` (none in an English-only model)."""
        if not self.multilingual:
            return {}
        first, last = self.id("<|startoftranscript|>") + 1, self.id("<|translate|>")
        return {self.tokens[i][2:-2]: i for i in range(first, last)}

    def check_prompt(self, language: str | None, task: str, what: str = "Whisper") -> None:
        """A one-line error when this model cannot take ``language`` / ``task``."""
        if task not in TASKS:
            raise FeedError(f"{what}: task {task!r} is not a Whisper task; allowed: {', '.join(TASKS)}")
        if not self.multilingual:
            if language not in (None, "en") or task != "transcribe":
                raise FeedError(
                    f"{what}: an English-only model transcribes English only (language {language!r}, task "
                    f"{task!r}); allowed: language en or unset, task transcribe; a multilingual model "
                    "(whisper-base) takes others"
                )
            return
        if language is not None and language not in self.language_ids:
            raise FeedError(
                f"{what}: language {language!r} is not one of the model's; allowed: {', '.join(self.language_ids)}"
            )

    def prompt_for(self, language: str | None = None, task: str = "transcribe") -> tuple[int, ...]:
        """The prompt up to ``<|notimestamps|>``; for a multilingual model without a language, the part after
        ``<|startoftranscript|>`` follows the detected language (``decode_features``)."""
        self.check_prompt(language, task)
        if not self.multilingual:
            return self.prompt
        return (
            self.id("<|startoftranscript|>"),
            self.language_ids[language or "en"],
            self.id(f"<|{task}|>"),
            self.id("<|notimestamps|>"),
        )

    @property
    def eot(self) -> int:
        return self.id("<|endoftext|>")

    @property
    def prompt(self) -> tuple[int, ...]:
        """Transcription without timestamps, without a language (English-only Whisper's prompt)."""
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


def decode_features(
    encoder: StepFn,
    cross_kv: StepFn,
    decoder_step: StepFn,
    features: np.ndarray,
    vocab: WhisperVocabulary,
    max_tokens: int | np.ndarray = 224,
    language: str | None = None,
    task: str = "transcribe",
) -> tuple[list[np.ndarray], list[str | None]]:
    """Greedy token ids (prompt and end-of-text stripped) for a batch of log-mels (batch, 80, 3000), in ``language``
    (None: English for an English-only model, detected for a multilingual one) doing ``task``; and the language
    each item was decoded in (``language``, the detected one, or None for an English-only model without one).

    ``max_tokens`` is one bound or one per item; an item stops at its own (or at end-of-text) and is fed
    end-of-text until the batch's last one stops, so each item decodes as it would alone: every item has the same
    30 s input and a prompt of the same length (a detected language is one token too), so the KV cache of one item
    never sees another's positions."""
    prompt = vocab.prompt_for(language, task)
    encoder_out = encoder({"features": np.ascontiguousarray(features, dtype=np.float32)})["encoder_out"]
    cross = cross_kv({"encoder_out": encoder_out})
    batch = features.shape[0]
    limits = np.broadcast_to(np.asarray(max_tokens, dtype=np.int64), (batch,))
    tokens = np.tile(np.array(prompt, dtype=np.int64), (batch, 1))
    layers, d = cross["cross_k"].shape[0], cross["cross_k"].shape[-1]
    # One masked slot, not an empty cache (speechperf.zoo.whisper.EMPTY_CACHE).
    self_k = self_v = np.zeros((layers, batch, 1, d), dtype=np.float32)
    languages: list[str | None] = [language] * batch
    if vocab.multilingual and language is None:
        tokens, self_k, self_v = _detect_language(decoder_step, cross, tokens, self_k, vocab)
        codes = {i: code for code, i in vocab.language_ids.items()}
        languages = [codes[int(t)] for t in tokens[:, 0]]
    eot = vocab.eot
    out = np.zeros((batch, 0), dtype=np.int64)
    finished = np.zeros(batch, dtype=bool)
    always = first = None
    for step in range(int(limits.max()) if batch else 0):
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
        finished |= (nxt == eot) | (step + 1 >= limits)
        if finished.all():
            break
        tokens, self_k, self_v = nxt[:, None], result["new_self_k"], result["new_self_v"]
    return [row[: int(np.argmax(row == eot)) if (row == eot).any() else len(row)] for row in out], languages


def _detect_language(decoder_step: StepFn, cross, prompt: np.ndarray, empty: np.ndarray, vocab: WhisperVocabulary):
    """One step over ``<|startoftranscript|>``: each item's most likely language token replaces the prompt's, and
    the rest of the prompt is fed after that step's cache."""
    step = decoder_step(
        {
            "tokens": prompt[:, :1],
            "self_k": empty,
            "self_v": empty,
            "cross_k": cross["cross_k"],
            "cross_v": cross["cross_v"],
        }
    )
    languages = np.array(list(vocab.language_ids.values()), dtype=np.int64)
    best = languages[np.asarray(step["logits"])[:, languages].argmax(axis=1)]
    rest = prompt[:, 1:].copy()
    rest[:, 0] = best
    return rest, step["new_self_k"], step["new_self_v"]


def transcribe(
    sessions: Mapping[str, StepFn],
    audio: list[np.ndarray],
    vocab: WhisperVocabulary,
    max_tokens: int = 224,
    language: str | None = None,
    task: str = "transcribe",
) -> list[str]:
    """Texts of mono 16 kHz waveforms (each at most 30 s is used), decoded as one batch."""
    features = np.stack([log_mel(a) for a in audio])
    ids, _ = decode_features(
        sessions["encoder"], sessions["cross_kv"], sessions["decoder_step"], features, vocab, max_tokens, language, task
    )
    return [vocab.decode(row) for row in ids]
