"""The quality meter's pass over a benchmark (``--meters ...,quality``): which stages are scored, and how.

It scores the outputs the benchmark already kept, in its own pass after every timed, memory and FLOPs pass, so it
never weighs on a measured figure; its own cost (including loading an ASR model) is reported apart. Text stages are
scored by speechperf.meters.quality; speech output is first transcribed by Whisper (tiny.en for English, the
multilingual base told the language otherwise), built here like any other stage, which is why this pass lives in the benchmark layer and the scoring below it (docs/architecture.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs
import numpy as np

from speechperf.meters.quality import QualityResult, QualityScore, score_texts, score_vad
from speechperf.meters.speech_quality import SpeechQuality

TEXT_ROLES = ("s2t", "mt")
SPEECH_ROLES = ("tts", "unit_vocoder", "s2s")
ASR_MODEL = "whisper-tiny-en"
MULTILINGUAL_ASR_MODEL, MULTILINGUAL_ASR_NAME = "whisper-base", "Whisper base"
ENGLISH = "en"
CLEAN_NAME = "clean reference"  # what PESQ / STOI are scored against, as the headline names it
ASR_NAME = "Whisper tiny.en"
#: The back-transcription's token bound: fairseq's max_len_a * encoder frames (50 a second) + max_len_b, i.e. 10
#: tokens a second plus 10, twice what speech needs; noise (a random-weight TTS) would otherwise decode to 224.
ASR_MAX_LEN_A, ASR_MAX_LEN_B = 0.2, 10


def wanted(general, refs, roles: Sequence[str]) -> tuple[bool, str | None]:
    """(run the meter?, the note that says why not). Asked for: it runs wherever it can. With the default meters:
    only where the dataset has references and no ASR is needed. Other meters named without it: off, silently."""
    from speechperf.config.schema import DEFAULT_METERS

    asked = "quality" in general.meters
    if not asked and tuple(general.meters) != DEFAULT_METERS:
        return False, None
    if refs is None and asked and roles[-1] in SPEECH_ROLES:
        return True, None  # speech quality (DNSMOS) needs no reference
    if refs is not None and refs.clean:
        return True, None  # clean recordings named for PESQ / STOI: the user asks for them by naming them
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
            "add quality to --meters to score intelligibility"
            + (" / ASR-BLEU" if len(roles) > 1 else "")
            + " and DNSMOS"
        )
    return True, None


def measure(bench, samples, refs, general, backend, workdir) -> QualityResult:
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
        if stage.role in TEXT_ROLES and refs is not None:
            scored = score_text_stage(name, stage, roles[index + 1 :], ids, refs, got, general, notes)
            if scored is not None:
                scores.append(scored)
        elif stage.role == "vad" and last and refs is not None:
            scores.append(score_vad(ids, refs, got, samples))
        elif stage.role in SPEECH_ROLES and last:
            if not any("waveform" in out for out in got.values()):
                notes.append(
                    f"quality not scored: {name} ({stage.label}) puts out {stage.output_kind}, not speech: "
                    "nothing to score as speech"
                    + (" (declare output_kind: mask over features.spectrum: linear to resynthesize a mask)"
                       if stage.output_kind in ("mask", "features") else "")
                )  # fmt: skip
                continue
            scored = score_speech(name, roles, ids, refs, got, bench, general, backend, workdir, notes)
            if scored is not None:
                scores.append(scored)
    return QualityResult(tuple(scores), time.perf_counter() - start, references_used(scores, refs), tuple(notes))


def references_used(scores: Sequence[QualityScore], refs) -> str | None:
    """Which references each score was made against: a text score's own (a transcript's src_text, a
    translation's tgt_text), the clean recordings for PESQ / STOI / MCD, the input recordings for a vocoder's MCD in
    copy synthesis; the dataset's for a score that names none (VAD segments). None: no score used any (DNSMOS
    alone, or nothing scored)."""
    used: list[str] = []
    for score in scores:
        speech = score.speech
        if score.reference:
            used.append(score.reference)
        elif score.metric not in ("speech",) and refs is not None and refs.origin:
            used.append(refs.origin)
        if speech is not None and speech.clean_reference and refs is not None:
            figures = "PESQ, STOI" + (" and MCD" if speech.mcd_db is not None else "")
            used.append(f"{figures} against the clean recordings of {refs.origin}")
        elif speech is not None and speech.mcd_db is not None and speech.reference:
            used.append(f"MCD against the {speech.reference}s (the speech the stage's input came from)")
    return ", ".join(dict.fromkeys(used)) or None


def score_text_stage(name, stage, later_roles, ids, refs, got, general, notes) -> QualityScore | None:
    """A text stage against the references of what it puts out (speechperf.benchmark.text_reference), each text
    normalized in its own language."""
    from speechperf.benchmark import text_reference as tr
    from speechperf.errors import SpeechperfError

    kind = tr.kind_of(stage.role, later_roles, stage.task)
    texts = {sid: str(out["text"]) for sid, out in got.items() if "text" in out}
    if not texts:
        if not later_roles:
            notes.append(
                f"quality not scored: {name} ({stage.label}) puts out token ids without text, so there is nothing "
                "to compare with the references"
            )
        return None
    try:
        reference = tr.reference_for(kind, refs, f"{name} ({stage.label})")
    except SpeechperfError as exc:  # the run's own output was checked before timing (text_reference.check)
        notes.append(f"{name} not scored: {exc}")
        return None
    if not reference.texts:
        return None
    unreferenced = [sid for sid in ids if sid in texts and sid not in reference.texts]
    if unreferenced:  # an empty src_text cell, say: never a silent cut
        notes.append(
            f"{name}: scoring {len(texts) - len(unreferenced)} of {len(texts)} samples: {reference.where} has no "
            f"reference for {len(unreferenced)} (first {unreferenced[0]!r})"
        )
    languages = tr.languages(kind, ids, refs, got, stage.task, stage.src_lang, general.language)
    translation = kind == tr.TARGET or (kind is None and refs.translation)
    metric = "bleu" if kind == tr.TARGET else "wer"
    return score_texts(name, metric, ids, reference.texts, texts, languages, translation, reference=reference.where)


def score_speech(name, roles, ids, refs, got, bench, general, backend, workdir, notes) -> QualityScore | None:
    """Back-transcribe every output waveform, then WER (TTS: against its input) or ASR-BLEU (S2ST); and the speech
    quality of every output waveform (speechperf.meters.speech_quality)."""
    speech = speech_quality(got, bench.inputs[len(bench.stages) - 1], refs, notes)
    scored = intelligibility(name, roles, ids, refs, got, general, backend, workdir, notes)
    if scored is None and speech is None:
        return None
    if scored is None:
        return QualityScore(name, "speech", speech.samples, speech=speech) if speech else None
    return attrs.evolve(scored, speech=speech)


def intelligibility(name, roles, ids, refs, got, general, backend, workdir, notes) -> QualityScore | None:
    """Each output waveform transcribed in its language (the dataset's tgt_lang, else general.language, else
    English; speechperf.benchmark.text_reference's normalizer for it), then WER or ASR-BLEU against the references."""
    waves = {sid: out for sid, out in got.items() if "waveform" in out and refs and sid in refs.texts}
    if not waves:
        return None
    languages = {sid: refs.language(sid, general.language or ENGLISH) for sid in waves}
    hyps: dict[str, str] = {}
    names = []
    for language in dict.fromkeys(languages.values()):
        transcriber = WhisperTranscriber(backend, general, workdir, language)
        names.append(transcriber.name)
        hyps.update(
            {sid: transcriber(out["waveform"], int(out["sample_rate"])) for sid, out in waves.items()
             if languages[sid] == language}
        )  # fmt: skip
    metric = "intelligibility" if roles == ("tts",) else "asr-bleu"
    return score_texts(name, metric, ids, refs.texts, hyps, languages, False, ", ".join(names), refs.origin)


def asr_for(language: str) -> tuple[str, str, str | None]:
    """(zoo model, its name, the language it is told) of the ASR that transcribes speech in ``language``: Whisper
    tiny.en for English, the multilingual Whisper base told the language otherwise (its code: pt for pt-br)."""
    base = language.lower().replace("_", "-").split("-")[0]
    if base in (ENGLISH, "eng"):
        return ASR_MODEL, ASR_NAME, None
    return MULTILINGUAL_ASR_MODEL, f"{MULTILINGUAL_ASR_NAME}, language {base}", base


def speech_quality(got, inputs, refs, notes) -> SpeechQuality | None:
    """DNSMOS of every output waveform; where the dataset names clean recordings (speech enhancement), MCD, PESQ and
    STOI against them; else MCD against the input recording where the stage was given one (a vocoder in copy
    synthesis: the speech its mel was made from). A missing package is a note, never a failed run."""
    from speechperf.extras import MissingExtraError
    from speechperf.meters import speech_quality as meter

    waves = {sid: (out["waveform"], int(out["sample_rate"])) for sid, out in got.items() if "waveform" in out}
    if not waves:
        return None
    clean = refs.clean if refs is not None else {}
    recordings = {
        sid: (inp["audio"], int(inp["sample_rate"]))
        for sid, inp in inputs.items()
        if sid in waves and "audio" in inp and inp.get("sample_rate")
    }
    # An enhancement model's input is the noisy speech: the clean recording is what its output should be
    against, name = (clean, CLEAN_NAME) if clean else (recordings, "input recording")
    try:
        return meter.score(waves, against or None, name if against else None, clean or None, CLEAN_NAME)
    except MissingExtraError as exc:
        notes.append(f"speech quality not scored: {exc}")
        return None


class WhisperTranscriber:
    """The zoo's Whisper for ``language`` (``asr_for``), on the benchmark's backend (its default format there),
    greedy decoding."""

    def __init__(self, backend, general, workdir, language: str = ENGLISH):
        from speechperf.benchmark import build
        from speechperf.config.schema import BenchConfig, GeneralConfig, StageConfig

        model, asr_name, told = asr_for(language)
        stage_cfg = StageConfig(
            model=model,
            preset="base",
            max_len_a=ASR_MAX_LEN_A,
            max_len_b=ASR_MAX_LEN_B,
            src_lang=told,
            task="transcribe",
        )
        cfg = BenchConfig(
            GeneralConfig(model_type="S2T", backend=backend.name, device=general.device, threads=general.threads),
            (stage_cfg,),
            source=f"the quality meter's ASR ({asr_name})",
        )
        with build.stdout_to_stderr():
            build.prepare_stages(cfg, backend.name, workdir)
            self.stage = build.build_stage(stage_cfg, "s2t", 1, cfg, backend, general.device, general.threads, workdir)
        self.name = f"{asr_name} ({self.stage.label} on {backend.name})"

    def __call__(self, waveform: np.ndarray, sample_rate: int) -> str:
        from speechperf.data.sample import Sample

        audio = np.asarray(waveform, dtype=np.float32).reshape(-1)
        sample = Sample(id="output", audio=audio, sample_rate=sample_rate)
        return str(self.stage.forward(self.stage.from_sample(sample))["text"]).strip()
