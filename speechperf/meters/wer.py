"""Word and character error rates of transcripts against references, with jiwer.

Both sides are normalised the same way before scoring (lower case, punctuation removed except apostrophes inside
words, whitespace collapsed), so "Hello, world." and "hello world" score 0. The rates are corpus-level: errors summed
over all utterances divided by the reference words (characters) summed over all utterances, which is what a WER
table means; a per-utterance mean would weight a two-word clip like a fifty-word one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from speechperf.errors import SpeechperfError

_PUNCTUATION = re.compile(r"[^\w\s']|(?<!\w)'|'(?!\w)")


@attrs.frozen
class WerResult:
    wer: float
    cer: float
    words: int  # reference words, after normalisation
    substitutions: int
    deletions: int
    insertions: int
    utterances: int


def normalize(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def score(references: Sequence[str], hypotheses: Sequence[str]) -> WerResult:
    """Corpus WER and CER of ``hypotheses`` against ``references`` (same order, same count)."""
    import jiwer

    if len(references) != len(hypotheses):
        raise SpeechperfError(
            f"WER needs one transcript per reference: got {len(hypotheses)} transcripts for "
            f"{len(references)} references"
        )
    if not references:
        raise SpeechperfError("WER needs at least one reference transcript, got none")
    refs = [normalize(r) for r in references]
    hyps = [normalize(h) for h in hypotheses]
    empty = [i for i, r in enumerate(refs) if not r]
    if empty:
        raise SpeechperfError(
            f"reference transcript {empty[0]} is empty after normalisation ({references[empty[0]]!r});"
            " every reference needs at least one word"
        )
    words = jiwer.process_words(refs, hyps)
    chars = jiwer.process_characters(refs, hyps)
    return WerResult(
        wer=float(words.wer),
        cer=float(chars.cer),
        words=sum(len(r.split()) for r in refs),
        substitutions=words.substitutions,
        deletions=words.deletions,
        insertions=words.insertions,
        utterances=len(refs),
    )
