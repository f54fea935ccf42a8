"""Text -> Kokoro-82M's inputs: espeak-ng phonemes mapped to Kokoro's vocabulary, and the style vector for that
many phonemes. Framework-free (numpy and the espeak-ng library of espeakng-loader).

Kokoro v1.0 speaks the languages other than English, Japanese and Chinese from espeak-ng's IPA (hexgrad's misaki
does this for them): espeak-ng with stress marks and a tie character between the two halves of an affricate or a
diphthong, the tied pairs written as Kokoro's one-symbol forms (``d^ʒ`` -> ``ʤ``, ``a^ʊ`` -> ``W``), the
punctuation kept, anything outside the vocabulary left out. The ids are padded with 0 at both ends; the style is
row n - 1 of the speaker's voice pack for n phonemes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from speechperf.adapters.phonemes import drop_language_flags, espeak_ipa, split_clauses
from speechperf.errors import SpeechperfError

#: espeak-ng's tied pairs (``--tie=^``) and the one symbol Kokoro's vocabulary has for each.
TIED = {
    "a^ɪ": "I",
    "a^ʊ": "W",
    "d^z": "ʣ",
    "d^ʒ": "ʤ",
    "e^ɪ": "A",
    "o^ʊ": "O",
    "ə^ʊ": "Q",
    "s^s": "S",
    "t^s": "ʦ",
    "t^ʃ": "ʧ",
    "ɔ^ɪ": "Y",
}


def espeak_phonemes(text: str, voice: str) -> str:
    """``text`` as espeak-ng IPA in ``voice`` (e.g. pt-br), stressed, tied pairs as Kokoro's symbols, each clause's
    punctuation put back after it (espeak-ng drops it; Kokoro reads it: pauses, intonation). The clauses and the
    espeak-ng call are the phoneme front-end's (speechperf.adapters.phonemes), with a tie character."""
    pieces = []
    for clause, terminator in split_clauses(text):
        pieces.append(espeak_ipa(clause, voice, tie="^") + (terminator + " " if terminator else " "))
    phonemes = "".join(pieces).strip()
    for tied, symbol in TIED.items():
        phonemes = phonemes.replace(tied, symbol)
    return drop_language_flags(phonemes).replace("^", "").replace("-", "")


def token_ids(phonemes: str, vocab: Mapping[str, int]) -> np.ndarray:
    """Kokoro's input ids, int64, padded with 0 at both ends; symbols outside the vocabulary are left out."""
    return np.array([0, *(vocab[c] for c in phonemes if c in vocab), 0], dtype=np.int64)


def style_for(pack: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The [1, 256] style for these ids: row n - 1 of the voice pack for n phonemes (pads not counted)."""
    n = max(1, min(int(ids.size) - 2, pack.shape[0]))
    return np.asarray(pack[n - 1], dtype=np.float32).reshape(1, -1)


class KokoroFrontend:
    """text -> {tokens, style, phonemes}, for one espeak-ng voice and one speaker's voice pack."""

    def __init__(self, vocab: Mapping[str, int], pack: np.ndarray, voice: str):
        self.vocab = dict(vocab)
        self.pack = pack
        self.voice = voice

    def __call__(self, text: str) -> dict[str, object]:
        phonemes = espeak_phonemes(text, self.voice)
        ids = token_ids(phonemes, self.vocab)
        if ids.size <= 2:
            raise SpeechperfError(f"Kokoro front-end: {text!r} gives no phoneme in Kokoro's vocabulary")
        return {"tokens": ids, "style": style_for(self.pack, ids), "phonemes": phonemes}


class KokoroSpeaker:
    """text -> (24 kHz float32 audio, 24000) through a Kokoro session (tokens, style, speed in; audio out), for
    ``speechperf data synth --engine kokoro``."""

    def __init__(self, session, frontend: KokoroFrontend, sample_rate: int, speed: float = 1.0):
        self.session = session
        self.frontend = frontend
        self.sample_rate = sample_rate
        self.speed = np.array([speed], dtype=np.float32)

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        made = self.frontend(text)
        feeds = {"tokens": np.asarray(made["tokens"])[None, :], "style": made["style"], "speed": self.speed}
        audio = next(iter(self.session(feeds).values()))
        return np.asarray(audio, dtype=np.float32).reshape(-1), self.sample_rate
