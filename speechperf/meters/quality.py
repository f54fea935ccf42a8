"""The quality meter: what the outputs are worth, beside how fast they came (``--meters ...,quality``).

It scores the outputs the benchmark already kept, in its own pass after every timed, memory and FLOPs pass, so it
never weighs on a measured figure; its own cost (including loading an ASR model) is reported apart. What is scored
depends on what the last stage puts out:

- text (S2T, speech translation, MT): WER and CER with jiwer (speechperf.meters.wer), corpus-level and per sample,
  after Whisper's English normalizer for English and its basic one for other languages (speechperf.meters.normalize);
  BLEU and chrF with sacrebleu where the references are translations (speechperf.meters.bleu). MT scores BLEU/chrF.
- speech (TTS, a unit vocoder, a direct S2S model, the cascades): the output waveform is transcribed by Whisper
  tiny.en (the zoo model, on the same backend, resampled to 16 kHz) and scored: intelligibility (WER against the
  text a TTS was asked to say), or ASR-BLEU (BLEU against the reference translation) for speech-to-speech
  translation. Only English is transcribed for now.
- VAD: frame agreement and segment F1 against reference segments (speechperf.meters.vad_score).

The pass over a benchmark (which stages, when, the ASR for speech) is speechperf.benchmark.quality. It runs: when ``quality`` is among the meters; and, with the default meters, whenever the dataset has
references and scoring needs no ASR model (a note says why it did not run otherwise). The references come from
speechperf.data.references.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from speechperf.errors import SpeechperfError
from speechperf.meters.speech_quality import SpeechQuality


@attrs.frozen
class SampleQuality:
    """One sample as scored: the reference, the hypothesis (transcript, translation or back-transcription), both
    as the normalizer of its language left them (what WER counts), its word errors over its reference words (WER
    metrics) and its sentence BLEU (BLEU metrics)."""

    id: str
    reference: str
    hypothesis: str
    errors: int | None = None
    words: int | None = None
    bleu: float | None = None
    language: str | None = None
    reference_normalized: str | None = None  # None: scored as written (BLEU: sacrebleu's own tokenizer)
    hypothesis_normalized: str | None = None


@attrs.frozen
class QualityScore:
    """The scores of one stage (``stage1 s2t``) or of the whole run (``total``)."""

    stage: str
    metric: str  # "wer", "bleu", "intelligibility", "asr-bleu", "vad", "speech" (speech quality alone)
    samples: int
    wer: float | None = None  # 0..1
    cer: float | None = None
    bleu: float | None = None  # 0..100
    chrf: float | None = None
    agreement: float | None = None  # 0..1
    segment_f1: float | None = None
    normalizer: str | None = None
    signature: str | None = None  # sacrebleu's
    asr: str | None = None  # the model that transcribed speech output, and where it ran
    per_sample: tuple[SampleQuality, ...] = ()
    #: speech output: DNSMOS, MCD, PESQ / STOI (speechperf.meters.speech_quality.SpeechQuality)
    speech: SpeechQuality | None = None

    reference: str | None = None  # what it was scored against: "src_text of data/st.tsv"
    language: str | None = None  # of the texts scored ("es"; "es, pt" when the samples differ)

    def headline(self) -> str:
        parts = []
        if self.metric == "asr-bleu":
            parts.append(f"ASR-BLEU {self.bleu:.1f}")
        elif self.bleu is not None:
            parts.append(f"BLEU {self.bleu:.1f} chrF {self.chrf:.1f}")
        if self.wer is not None:
            parts.append(("intelligibility " if self.metric == "intelligibility" else "") + f"WER {self.wer:.1%}")
            parts.append(f"CER {self.cer:.1%}")
        if self.agreement is not None:
            parts.append(f"VAD agreement {self.agreement:.1%} segment F1 {self.segment_f1:.2f}")
        if self.normalizer:  # every figure names what it was scored after
            parts.append(f"({self.normalizer})")
        if self.speech is not None and self.speech.headline():
            parts.append(("; " if parts else "") + self.speech.headline())
        return " ".join(parts).replace(" ; ", "; ")

    def described(self) -> str:
        """The headline with what it was scored against and in which language, as the log lines print it."""
        against = f" against {self.reference}" if self.reference else ""
        return self.headline() + against + (f" (language {self.language})" if self.language else "")

    @property
    def primary(self) -> tuple[str, float] | None:
        """The one figure compared across backends and variants, in points: WER (%), BLEU, agreement (%)."""
        if self.metric in ("bleu", "asr-bleu") and self.bleu is not None:
            return ("ASR-BLEU" if self.metric == "asr-bleu" else "BLEU"), self.bleu
        if self.wer is not None:
            return "WER", 100 * self.wer
        if self.agreement is not None:
            return "agreement", 100 * self.agreement
        return None


@attrs.frozen
class QualityResult:
    scores: tuple[QualityScore, ...]
    seconds: float  # the whole untimed pass, ASR loading included
    references: str | None  # where the references came from
    notes: tuple[str, ...] = ()

    def of(self, stage: str) -> QualityScore | None:
        return next((s for s in self.scores if s.stage == stage), None)

    @property
    def total(self) -> QualityScore | None:
        return self.of("total")


def check_references(refs, general) -> None:
    """Refuse, before anything is loaded, references that cannot be scored: one empty after its normalizer."""
    from speechperf.meters.normalize import for_language
    from speechperf.meters.normalize import get as get_normalizer

    if refs is None:
        return
    for texts, of_targets in ((refs.texts, True), (refs.sources, False)):
        for sid, text in texts.items():
            name = for_language(refs.language(sid, general.language) if of_targets else general.language)
            if not get_normalizer(name)(text):
                raise SpeechperfError(
                    f"the reference of sample {sid!r} ({text!r}, from {refs.origin}) is empty after the {name} "
                    "normalizer; every reference needs at least one word"
                )


def score_texts(
    stage: str,
    metric: str,
    ids: Sequence[str],
    references: Mapping[str, str],
    hypotheses: Mapping[str, str],
    languages: Mapping[str, str],
    translation: bool,
    asr: str | None = None,
    reference: str | None = None,
) -> QualityScore | None:
    """WER/CER (``metric`` wer, intelligibility, asr-bleu) and BLEU/chrF (bleu, asr-bleu, or ``translation``), each
    sample normalized after the normalizer of its language (``languages``, by sample id); ``reference`` says where
    the references came from."""
    from speechperf.meters import bleu as bleu_meter
    from speechperf.meters import wer as wer_meter
    from speechperf.meters.normalize import for_language

    scored = [sid for sid in ids if sid in references and sid in hypotheses]
    if not scored:
        return None
    langs = [languages.get(sid) or "en" for sid in scored]
    normalizers = [for_language(lang) for lang in langs]
    ref_list = [references[sid] for sid in scored]
    hyp_list = [hypotheses[sid] for sid in scored]
    wer = bleu = None
    if metric != "bleu":
        wer = wer_meter.score(ref_list, hyp_list, normalizers)
    if metric in ("bleu", "asr-bleu") or translation:
        bleu = bleu_meter.score(ref_list, hyp_list, normalizers if metric == "asr-bleu" else None)
    per_sample = tuple(
        SampleQuality(
            sid,
            references[sid],
            hypotheses[sid],
            wer.per_sample[i].errors if wer else None,
            wer.per_sample[i].words if wer else None,
            round(bleu.sentence_bleu[i], 2) if bleu else None,
            langs[i],
            wer.references[i] if wer else None,
            wer.hypotheses[i] if wer else None,
        )
        for i, sid in enumerate(scored)
    )
    return QualityScore(
        stage,
        metric,
        len(scored),
        wer=wer.wer if wer else None,
        cer=wer.cer if wer else None,
        bleu=bleu.bleu if bleu else None,
        chrf=bleu.chrf if bleu else None,
        normalizer=", ".join(dict.fromkeys(normalizers)) if (wer or metric == "asr-bleu") else None,
        signature=bleu.signature if bleu else None,
        asr=asr,
        per_sample=per_sample,
        reference=reference,
        language=", ".join(dict.fromkeys(langs)),
    )


def score_vad(ids, refs, got, samples) -> QualityScore:
    from speechperf.meters import vad_score

    seconds = {s.id: s.seconds for s in samples if s.seconds}
    predicted = {sid: out["segments"] for sid, out in got.items() if "segments" in out}
    result = vad_score.score(refs.segments, predicted, seconds)
    if result is None:
        raise SpeechperfError("quality: no VAD output matches a sample with reference segments")
    per_sample = tuple(
        SampleQuality(sid, _segments_text(refs.segments[sid]), _segments_text(predicted[sid]))
        for sid in ids
        if sid in predicted and sid in refs.segments
    )
    return QualityScore(
        "total",
        "vad",
        len(per_sample),
        agreement=result.agreement,
        segment_f1=result.segment_f1,
        per_sample=per_sample,
    )


def _segments_text(segments) -> str:
    return " ".join(f"{a:.2f}-{b:.2f}" for a, b in segments)


def save_text(result: QualityResult) -> str:
    """``--save-text``: one row per scored sample of the run's score: id, language, the reference and hypothesis as
    written and as normalized, then the word errors and reference words (WER) and the sentence BLEU (translation)."""
    score = result.total or (result.scores[-1] if result.scores else None)
    samples = score.per_sample if score else ()
    columns = ["id", "language", "reference", "hypothesis", "reference_normalized", "hypothesis_normalized"]
    if any(s.errors is not None for s in samples):
        columns += ["errors", "words"]
    if any(s.bleu is not None for s in samples):
        columns.append("bleu")
    lines = ["\t".join(columns)]
    for s in samples:
        values = attrs.asdict(s)
        lines.append("\t".join(_cell("" if values[c] is None else values[c]) for c in columns))
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    return " ".join(str(value).split())  # tabs and newlines inside a text would break the TSV
