"""Word and character error rates of transcripts against references, with jiwer.

Both sides go through the same normalizer first (``speechperf.meters.normalize``; Whisper's English normalizer
unless told otherwise), so "10 of clubs." and "ten of clubs" score 0. The rates are corpus-level: errors summed over
all utterances divided by the reference words (characters) summed over all utterances, which is what a WER table
means; a per-utterance mean would weight a two-word clip like a fifty-word one. The per-utterance counts are kept
too (``per_sample``), from the same alignment.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from speechperf.errors import SpeechperfError
from speechperf.meters.normalize import SIMPLE, WHISPER_ENGLISH, apply, label
from speechperf.meters.normalize import get as get_normalizer


def normalize(text: str) -> str:
    """speechperf's simple normalizer (lower case, punctuation out, apostrophes inside words kept)."""
    return get_normalizer(SIMPLE)(text)


@attrs.frozen
class UtteranceErrors:
    """One utterance: word errors (substitutions + deletions + insertions) over its reference words."""

    errors: int
    words: int
    char_errors: int
    chars: int

    @property
    def wer(self) -> float:
        return self.errors / self.words if self.words else float(self.errors > 0)


@attrs.frozen
class WerResult:
    wer: float
    cer: float
    words: int  # reference words, after normalisation
    substitutions: int
    deletions: int
    insertions: int
    utterances: int
    normalizer: str = WHISPER_ENGLISH
    per_sample: tuple[UtteranceErrors, ...] = ()
    references: tuple[str, ...] = ()  # after normalisation, as scored
    hypotheses: tuple[str, ...] = ()


def _edits(alignment) -> int:
    return sum(
        (c.ref_end_idx - c.ref_start_idx) if c.type in ("substitute", "delete") else (c.hyp_end_idx - c.hyp_start_idx)
        for c in alignment
        if c.type != "equal"
    )


def check_pairs(metric: str, references: Sequence[str], hypotheses: Sequence[str], what: str, whats: str) -> None:
    """One hypothesis per reference, and at least one reference: else a one-line error naming both counts."""
    if len(references) != len(hypotheses):
        raise SpeechperfError(
            f"{metric} needs one {what} per reference: got {len(hypotheses)} {whats} for {len(references)} references"
        )
    if not references:
        raise SpeechperfError(f"{metric} needs at least one reference {what}, got none")


def score(
    references: Sequence[str], hypotheses: Sequence[str], normalizer: str | Sequence[str] = WHISPER_ENGLISH
) -> WerResult:
    """Corpus WER and CER of ``hypotheses`` against ``references`` (same order, same count), both normalized after
    ``normalizer``: one name, or one per pair (samples in several languages)."""
    import jiwer

    check_pairs("WER", references, hypotheses, "transcript", "transcripts")
    refs = apply(references, normalizer)
    hyps = apply(hypotheses, normalizer)
    empty = [i for i, r in enumerate(refs) if not r]
    if empty:
        raise SpeechperfError(
            f"reference transcript {empty[0]} is empty after normalisation ({references[empty[0]]!r}, "
            f"normalizer {label(normalizer)}); every reference needs at least one word"
        )
    words = jiwer.process_words(refs, hyps)
    chars = jiwer.process_characters(refs, hyps)
    per_sample = tuple(
        UtteranceErrors(_edits(w), len(r.split()), _edits(c), len(r))
        for w, c, r in zip(words.alignments, chars.alignments, refs)
    )
    return WerResult(
        wer=float(words.wer),
        cer=float(chars.cer),
        words=sum(len(r.split()) for r in refs),
        substitutions=words.substitutions,
        deletions=words.deletions,
        insertions=words.insertions,
        utterances=len(refs),
        normalizer=label(normalizer),
        per_sample=per_sample,
        references=tuple(refs),
        hypotheses=tuple(hyps),
    )
