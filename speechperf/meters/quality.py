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

When it runs: when ``quality`` is among the meters; and, with the default meters, whenever the dataset has
references and scoring needs no ASR model (a note says why it did not run otherwise). The references come from
speechperf.data.references.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from speechperf.errors import SpeechperfError

TEXT_ROLES = ("s2t", "mt")
SPEECH_ROLES = ("tts", "unit_vocoder", "s2s")
ASR_MODEL = "whisper-tiny-en"
ASR_NAME = "Whisper tiny.en"
#: The back-transcription's token bound: fairseq's max_len_a * encoder frames (50 a second) + max_len_b, i.e. 10
#: tokens a second plus 10, twice what speech needs; noise (a random-weight TTS) would otherwise decode to 224.
ASR_MAX_LEN_A, ASR_MAX_LEN_B = 0.2, 10


@attrs.frozen
class SampleQuality:
    """One sample as scored: the reference, the hypothesis (transcript, translation or back-transcription), and
    its word errors over its reference words (WER metrics) or its sentence BLEU (BLEU metrics)."""

    id: str
    reference: str
    hypothesis: str
    errors: int | None = None
    words: int | None = None
    bleu: float | None = None


@attrs.frozen
class QualityScore:
    """The scores of one stage (``stage1 s2t``) or of the whole run (``total``)."""

    stage: str
    metric: str  # "wer", "bleu", "intelligibility", "asr-bleu", "vad"
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
        return " ".join(parts)

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


def wanted(general, refs, roles: Sequence[str]) -> tuple[bool, str | None]:
    """(run the meter?, the note that says why not). Asked for: it runs wherever it can. With the default meters:
    only where the dataset has references and no ASR is needed. Other meters named without it: off, silently."""
    from speechperf.config.schema import DEFAULT_METERS

    asked = "quality" in general.meters
    if not asked and tuple(general.meters) != DEFAULT_METERS:
        return False, None
    if refs is None:
        how = (
            "reference segments (general.reference_path, or a .seg file beside the manifest)"
            if roles[-1] == "vad"
            else "references (a .wrd beside a raw manifest, a fairseq_s2t manifest, a .ref beside a text dataset, "
            "or general.reference_path)"
        )
        # Asked for, or a real dataset without references: say why. VAD without segments, unasked: nothing.
        if asked or (general.dataset_type != "generated" and roles[-1] != "vad"):
            return False, f"quality not scored: the dataset has no {how}"
        return False, None
    if roles[-1] in SPEECH_ROLES and not asked:
        return False, (
            f"quality not scored by default for speech output: it transcribes every output with {ASR_NAME}; "
            "add quality to --meters to score intelligibility" + (" / ASR-BLEU" if len(roles) > 1 else "")
        )
    return True, None


def check_references(refs, general) -> None:
    """Refuse, before anything is loaded, references that cannot be scored: one empty after its normalizer."""
    from speechperf.meters.normalize import for_language
    from speechperf.meters.normalize import get as get_normalizer

    if refs is None:
        return
    for texts in (refs.texts, refs.sources):
        for sid, text in texts.items():
            name = for_language(refs.language(sid, general.language))
            if not get_normalizer(name)(text):
                raise SpeechperfError(
                    f"the reference of sample {sid!r} ({text!r}, from {refs.origin}) is empty after the {name} "
                    "normalizer; every reference needs at least one word"
                )


def measure(bench, samples, refs, general, backend, workdir, log=None) -> QualityResult:
    """Score ``bench``'s kept outputs (after ``gather_all_metrics``) against ``refs`` (speechperf.data.references)."""
    start = time.perf_counter()
    notes: list[str] = []
    scores: list[QualityScore] = []
    roles = tuple(s.role for s in bench.stages)
    ids = list(bench.sample_ids)
    outputs = bench.stage_outputs()
    for index, stage in enumerate(bench.stages):
        last = index == len(bench.stages) - 1
        name = "total" if last else f"stage{index + 1} {stage.role}"
        got = outputs[index]
        if stage.role in TEXT_ROLES:
            # A cascade's ASR before an MT stage is scored against the source transcripts, when there are any;
            # every other text stage against the references of the run's output text.
            before_mt = stage.role == "s2t" and "mt" in roles[index + 1 :]
            refs_here = refs.sources if before_mt else refs.texts
            texts = {sid: str(out["text"]) for sid, out in got.items() if "text" in out}
            if not texts or not refs_here:
                if last:
                    notes.append(
                        f"quality not scored: stage{index + 1} ({stage.label}) puts out token ids without text, "
                        "so there is nothing to compare with the references"
                    )
                continue
            metric = "bleu" if stage.role == "mt" else "wer"
            translation = stage.role == "mt" or (not before_mt and refs.translation)
            scored = score_texts(name, metric, ids, refs_here, texts, refs, general.language, translation)
            if scored is not None:
                scores.append(scored)
        elif stage.role == "vad" and last:
            scores.append(score_vad(ids, refs, got, samples))
        elif stage.role in SPEECH_ROLES and last:
            scored = score_speech(name, roles, ids, refs, got, bench, general, backend, workdir, log, notes)
            if scored is not None:
                scores.append(scored)
    return QualityResult(tuple(scores), time.perf_counter() - start, refs.origin, tuple(notes))


def score_texts(
    stage: str,
    metric: str,
    ids: Sequence[str],
    references: Mapping[str, str],
    hypotheses: Mapping[str, str],
    refs,
    default_language: str,
    translation: bool,
    asr: str | None = None,
) -> QualityScore | None:
    """WER/CER (``metric`` wer, intelligibility, asr-bleu) and BLEU/chrF (bleu, asr-bleu, or ``translation``)."""
    from speechperf.meters import bleu as bleu_meter
    from speechperf.meters import wer as wer_meter
    from speechperf.meters.normalize import for_language

    scored = [sid for sid in ids if sid in references and sid in hypotheses]
    if not scored:
        return None
    languages = {refs.language(sid, default_language) for sid in scored}
    if len(languages) > 1:
        raise SpeechperfError(
            f"the references are in {len(languages)} languages ({', '.join(sorted(languages))}); score one "
            "language per run (a subset per tgt_lang)"
        )
    normalizer = for_language(languages.pop())
    ref_list = [references[sid] for sid in scored]
    hyp_list = [hypotheses[sid] for sid in scored]
    wer = bleu = None
    if metric != "bleu":
        wer = wer_meter.score(ref_list, hyp_list, normalizer)
    if metric in ("bleu", "asr-bleu") or translation:
        bleu = bleu_meter.score(ref_list, hyp_list, normalizer if metric == "asr-bleu" else None)
    per_sample = tuple(
        SampleQuality(
            sid,
            references[sid],
            hypotheses[sid],
            wer.per_sample[i].errors if wer else None,
            wer.per_sample[i].words if wer else None,
            round(bleu.sentence_bleu[i], 2) if bleu else None,
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
        normalizer=normalizer if (wer or metric == "asr-bleu") else None,
        signature=bleu.signature if bleu else None,
        asr=asr,
        per_sample=per_sample,
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


def score_speech(name, roles, ids, refs, got, bench, general, backend, workdir, log, notes) -> QualityScore | None:
    """Back-transcribe every output waveform, then WER (TTS: against its input) or ASR-BLEU (S2ST)."""
    waves = {sid: out for sid, out in got.items() if "waveform" in out and sid in refs.texts}
    if not waves:
        return None
    languages = {refs.language(sid, general.language) for sid in waves}
    if any(lang.lower().split("-")[0] not in ("en", "eng") for lang in languages):
        notes.append(
            f"quality not scored: speech in {', '.join(sorted(languages))} needs a multilingual ASR; only "
            f"English is transcribed for now ({ASR_NAME})"
        )
        return None
    transcriber = WhisperTranscriber(backend, general, workdir, log)
    hyps = {sid: transcriber(out["waveform"], int(out["sample_rate"])) for sid, out in waves.items()}
    metric = "intelligibility" if roles == ("tts",) else "asr-bleu"
    return score_texts(name, metric, ids, refs.texts, hyps, refs, general.language, False, transcriber.name)


class WhisperTranscriber:
    """Whisper tiny.en from the zoo, on the benchmark's backend (its default format there), greedy decoding."""

    def __init__(self, backend, general, workdir, log=None):
        from speechperf.benchmark import build
        from speechperf.config.schema import BenchConfig, GeneralConfig, StageConfig

        stage_cfg = StageConfig(model=ASR_MODEL, preset="base", max_len_a=ASR_MAX_LEN_A, max_len_b=ASR_MAX_LEN_B)
        cfg = BenchConfig(
            GeneralConfig(model_type="S2T", backend=backend.name, device=general.device, threads=general.threads),
            (stage_cfg,),
            source=f"the quality meter's ASR ({ASR_NAME})",
        )
        with build.stdout_to_stderr():
            build.prepare_stages(cfg, backend.name, workdir, log)
            self.stage = build.build_stage(stage_cfg, "s2t", 1, cfg, backend, general.device, general.threads, workdir)
        self.name = f"{ASR_NAME} ({self.stage.label} on {backend.name})"

    def __call__(self, waveform: np.ndarray, sample_rate: int) -> str:
        from speechperf.data.sample import Sample

        audio = np.asarray(waveform, dtype=np.float32).reshape(-1)
        sample = Sample(id="output", audio=audio, sample_rate=sample_rate)
        return str(self.stage.forward(self.stage.from_sample(sample))["text"]).strip()


def save_text(result: QualityResult) -> str:
    """``--save-text``: one row per scored sample of the run's score: id, reference, hypothesis, errors."""
    score = result.total or (result.scores[-1] if result.scores else None)
    lines = ["id\treference\thypothesis\terrors"]
    for s in score.per_sample if score else ():
        errors = s.errors if s.errors is not None else ("" if s.bleu is None else f"sentence BLEU {s.bleu}")
        lines.append("\t".join(_cell(v) for v in (s.id, s.reference, s.hypothesis, errors)))
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    return " ".join(str(value).split())  # tabs and newlines inside a text would break the TSV
