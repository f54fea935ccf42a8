"""BLEU and chrF of translations against references, with sacrebleu (corpus-level, one reference per sample).

Scored as sacrebleu scores by default (its 13a tokenizer, mixed case, exponential smoothing for BLEU; chrF2 with
character 6-grams), so a figure here means what a paper's sacrebleu figure means; the signature that says exactly
how is kept with every score and printed. ASR-BLEU (speech-to-speech translation: BLEU of the transcribed output
speech, as fairseq's S2ST evaluation and the Translatotron / SeamlessM4T papers score it) normalizes both sides
with the same Whisper normalizer as WER first, since a transcript carries no trustworthy casing or punctuation.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs


@attrs.frozen
class BleuResult:
    bleu: float  # 0..100, as sacrebleu reports it
    chrf: float  # 0..100
    bleu_signature: str
    chrf_signature: str
    sentence_bleu: tuple[float, ...] = ()  # per sample, with effective order (sacrebleu's sentence_score)
    normalizer: str | None = None  # applied to both sides first (ASR-BLEU), or None: sacrebleu's own handling

    @property
    def signature(self) -> str:
        return f"BLEU {self.bleu_signature}; chrF {self.chrf_signature}"


def score(
    references: Sequence[str], hypotheses: Sequence[str], normalizer: str | Sequence[str] | None = None
) -> BleuResult:
    """Corpus BLEU and chrF of ``hypotheses`` against ``references`` (same order, same count); with
    ``normalizer`` (one name, or one per pair) both sides are normalized first."""
    from sacrebleu.metrics import BLEU, CHRF

    from speechperf.meters.normalize import label
    from speechperf.meters.wer import check_pairs

    check_pairs("BLEU", references, hypotheses, "hypothesis", "hypotheses")
    refs, hyps = list(references), list(hypotheses)
    if normalizer is not None:
        from speechperf.meters.normalize import apply

        refs, hyps = apply(refs, normalizer), apply(hyps, normalizer)
    bleu, chrf = BLEU(), CHRF()
    corpus_bleu = bleu.corpus_score(hyps, [refs])
    corpus_chrf = chrf.corpus_score(hyps, [refs])
    sentence = BLEU(effective_order=True)
    per_sample = tuple(float(sentence.sentence_score(h, [r]).score) for h, r in zip(hyps, refs))
    return BleuResult(
        float(corpus_bleu.score),
        float(corpus_chrf.score),
        str(bleu.get_signature()),
        str(chrf.get_signature()),
        per_sample,
        None if normalizer is None else label(normalizer),
    )
