"""Text normalizers applied to both references and hypotheses before WER, CER and ASR-BLEU are scored.

Whisper's WER, as the Whisper paper, the Open ASR Leaderboard and the papers after them report it, is scored after
Whisper's English text normalizer: numbers written as digits ("ten of clubs" and "10 of clubs." are the same),
British spellings mapped to American ones, contractions and abbreviations spelled out ("Mr." is "mister"), casing,
punctuation and fillers ("uh", "um") removed. Other languages get Whisper's basic normalizer (lower case, symbols
and punctuation removed, accents kept: "Dónde está" is "dónde está"; whitespace collapsed).

Both come from the ``whisper-normalizer`` package (pinned in constraints.txt): it is OpenAI Whisper's
``whisper/normalizers`` code (MIT) as a small package of its own, with its spelling table, and depends on no
framework. ``openai-whisper`` holds the same code but installs torch, numba, tiktoken and triton to get it.

``simple`` is speechperf's earlier normalizer (lower case, punctuation removed except apostrophes inside words), for
comparing with figures scored that way. Every output that holds a figure names the normalizer it was scored after.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from speechperf.errors import SpeechperfError

WHISPER_ENGLISH = "whisper-english"
WHISPER_BASIC = "whisper-basic"
SIMPLE = "simple"
NORMALIZERS = (WHISPER_ENGLISH, WHISPER_BASIC, SIMPLE)

_PUNCTUATION = re.compile(r"[^\w\s']|(?<!\w)'|'(?!\w)")


def simple(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def for_language(language: str | None) -> str:
    """The normalizer a language is scored after: Whisper's English one for English, the basic one otherwise."""
    return WHISPER_ENGLISH if (language or "en").lower().split("_")[0].split("-")[0] in ("en", "eng") else WHISPER_BASIC


@functools.cache
def get(name: str) -> Callable[[str], str]:
    """The normalizer called ``name`` (imported on first use: ``import speechperf`` stays light)."""
    if name == SIMPLE:
        return simple
    if name not in NORMALIZERS:
        raise SpeechperfError(f"unknown text normalizer {name!r}; allowed: {', '.join(NORMALIZERS)}")
    try:
        if name == WHISPER_ENGLISH:
            from whisper_normalizer.english import EnglishTextNormalizer as Normalizer
        else:
            from whisper_normalizer.basic import BasicTextNormalizer as Normalizer
    except ImportError:
        raise SpeechperfError(
            f"the {name} normalizer needs the whisper-normalizer package; install it with: "
            'pip install "whisper-normalizer>=0.1.15"'
        ) from None
    normalizer = Normalizer()
    return lambda text: " ".join(normalizer(text).split())


def normalize(text: str, name: str = WHISPER_ENGLISH) -> str:
    return get(name)(text)


def apply(texts: Sequence[str], names: str | Sequence[str]) -> list[str]:
    """Each text after its normalizer: one name for all, or one per text (texts in several languages)."""
    per_text = [names] * len(texts) if isinstance(names, str) else list(names)
    if len(per_text) != len(texts):
        raise SpeechperfError(f"{len(per_text)} normalizers for {len(texts)} texts; give one, or one per text")
    return [get(name)(text) for name, text in zip(per_text, texts)]


def label(names: str | Sequence[str]) -> str:
    """What the texts were normalized after, as printed: one name, or the distinct ones joined."""
    return names if isinstance(names, str) else ", ".join(dict.fromkeys(names))
