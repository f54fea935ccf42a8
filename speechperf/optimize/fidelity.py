"""How close a variant's outputs stay to fp32, per stage type, from what the benchmark runs produced.

- text (s2t, mt, s2u): token agreement with fp32, ``1 - edit distance / fp32 tokens`` over the dataset (jiwer over
  the id sequences; units for s2u); and, where the stage decodes text and the dataset has references, the quality
  meter's scores (speechperf.meters.quality: WER / CER after Whisper's normalizer, BLEU / chrF for MT), the same
  figures ``speechperf bench`` prints.
- vad: decision agreement with fp32: the fraction of 32 ms windows (the silero hop) that both call speech or both
  call silence, over the whole dataset (speechperf.meters.vad_score).
- speech output (a waveform): SNR of the variant's waveform against fp32's, in dB, over the samples both
  produced (a length difference is reported), with the SNR formula of speechperf.meters.fidelity; DNSMOS of each
  run's speech and the variant's MCD against fp32's, and where the dataset has clean recordings (enhancement) the
  PESQ and STOI of each run's speech against them (speechperf.meters.speech_quality). Every other float output
  (a mask, a file's outputs, and the waveforms again, as arrays) is compared by the fidelity meter itself
  (optimize's ``float outputs vs fp32`` column), held to ``--min-snr``.
- every graph, every stage type: the max |variant - fp32| of each graph's outputs on held-back calibration feeds,
  relative to the fp32 output's max |value| (``graph_rel_diff``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from speechperf.meters.fidelity import snr_db_of
from speechperf.meters.quality import QualityScore
from speechperf.meters.speech_quality import SpeechQuality
from speechperf.meters.vad_score import frame_agreement

TEXT_ROLES = ("s2t", "mt", "s2u")
SPEECH_ROLES = ("tts", "unit_vocoder", "s2s")


@attrs.frozen
class QualityBudget:
    """How much quality a variant may lose against fp32 and still count as a speed-up ("ok")."""

    max_wer_increase: float | None = 1.0  # WER points (absolute)
    max_bleu_drop: float | None = 1.0  # BLEU points
    min_agreement: float | None = None  # token or VAD agreement with fp32, 0..1
    max_mos_drop: float | None = 0.2  # DNSMOS OVRL, fp32's less the variant's (MOS points)
    max_mcd: float | None = None  # dB, the variant's speech against fp32's (DTW-aligned)
    #: dB: every float output that is no speech waveform (a mask, features, a file's outputs) against fp32's; a
    #: waveform, which a generative model may shift or stretch, is judged by MCD and DNSMOS instead
    min_snr_db: float | None = 20.0

    def float_tolerance(self) -> dict[str, float]:
        """The tolerance (speechperf.meters.fidelity) a float output of a variant is held to where its stage
        declares none: the SNR floor alone (fp32-to-fp32's 1e-3 relative limit would fail every int8 variant)."""
        return {
            "max_rel": math.inf,
            "cosine": -1.0,
            "snr_db": -math.inf if self.min_snr_db is None else self.min_snr_db,
        }


@attrs.frozen
class Fidelity:
    kind: str  # "tokens", "vad", "snr", "graphs"
    value: float | None  # the headline number: agreement (0..1) or SNR (dB)
    quality: QualityScore | None = None  # against the references, where the dataset has them
    detail: str = ""
    speech: SpeechQuality | None = None  # DNSMOS of the speech output; MCD against fp32's (a variant's)

    @property
    def wer(self) -> float | None:
        return self.quality.wer if self.quality else None

    @property
    def cer(self) -> float | None:
        return self.quality.cer if self.quality else None

    @property
    def bleu(self) -> float | None:
        return self.quality.bleu if self.quality else None

    def text(self) -> str:
        if self.value is None:
            return self.detail or "-"
        parts = []
        if self.quality is not None:
            parts.append(self.quality.headline())
        if self.kind == "tokens":
            parts.append(f"token agreement {self.value:.1%}")
        elif self.kind == "vad":
            parts.append(f"VAD agreement {self.value:.1%}")
        elif self.kind == "snr":
            parts.append(f"SNR {self.value:.1f} dB")
        else:
            parts.append(f"max rel diff {self.value:.2g}")
        if self.detail:
            parts.append(self.detail)
        if self.speech is not None:
            parts.append(self.speech.headline())
        return ", ".join(parts)

    @property
    def mos(self) -> float | None:
        return self.speech.dnsmos_ovrl if self.speech else None

    @property
    def mcd_db(self) -> float | None:
        return self.speech.mcd_db if self.speech else None

    @property
    def pesq(self) -> float | None:
        return self.speech.pesq if self.speech else None

    @property
    def stoi(self) -> float | None:
        return self.speech.stoi if self.speech else None


def over_budget(fp32: Fidelity | None, variant: Fidelity | None, budget: QualityBudget) -> list[str]:
    """What ``variant`` loses past ``budget`` against ``fp32``: ["WER +19.1 points"], or [] within it."""
    if variant is None:
        return []
    found = []
    if fp32 is not None and fp32.wer is not None and variant.wer is not None and budget.max_wer_increase is not None:
        rise = 100 * (variant.wer - fp32.wer)
        if rise > budget.max_wer_increase:
            found.append(f"WER {rise:+.1f} points")
    if fp32 is not None and fp32.bleu is not None and variant.bleu is not None and budget.max_bleu_drop is not None:
        drop = fp32.bleu - variant.bleu
        if drop > budget.max_bleu_drop:
            found.append(f"BLEU {-drop:+.1f} points")
    if budget.min_agreement is not None and variant.kind in ("tokens", "vad") and variant.value is not None:
        if variant.value < budget.min_agreement:
            found.append(f"{variant.kind} agreement {variant.value:.1%} < {budget.min_agreement:.1%}")
    mos = mos_drop(fp32, variant)
    if mos is not None and budget.max_mos_drop is not None and mos > budget.max_mos_drop:
        found.append(f"DNSMOS OVRL {-mos:+.2f}")
    if budget.max_mcd is not None and variant.mcd_db is not None and variant.mcd_db > budget.max_mcd:
        found.append(f"MCD {variant.mcd_db:.2f} dB > {budget.max_mcd:g}")
    return found


def mos_drop(fp32: Fidelity | None, variant: Fidelity | None) -> float | None:
    """fp32's DNSMOS OVRL less the variant's (positive: the variant sounds worse)."""
    if fp32 is None or variant is None or fp32.mos is None or variant.mos is None:
        return None
    return fp32.mos - variant.mos


def floats_over_budget(diffs, final_stage: str, speech_out: bool) -> list[str]:
    """The float outputs (speechperf.compare.parity.OutputDiff) that differ from fp32 past their tolerance, as
    phrases; the final speech waveform is left to MCD and DNSMOS."""
    found = []
    for d in diffs:
        if d.exact or not d.differing or (speech_out and d.stage == final_stage and d.name == "waveform"):
            continue
        snr = "" if d.snr_db is None else f" SNR {d.snr_db:.1f} dB,"
        found.append(f"{d.stage} {d.name}{snr} DIFFER in {d.differing}/{d.samples}")
    return found


def min_snr(diffs) -> float | None:
    """The lowest SNR of the float outputs compared (None: none has one)."""
    values = [d.snr_db for d in diffs if not d.exact and d.snr_db is not None]
    return min(values) if values else None


def speech_fidelity(
    fp32_dir: Path, variant_dir: Path, against_fp32: bool, clean: Mapping[str, tuple[np.ndarray, int]] | None = None
) -> SpeechQuality | None:
    """DNSMOS of every dumped waveform of a run; with ``against_fp32``, the MCD of each against fp32's (the same
    ``*_pred.wav`` name); PESQ and STOI against ``clean`` (the clean recordings of an enhancement dataset, by dumped
    file name). Raises speechperf.extras.MissingExtraError when a package is missing."""
    import soundfile as sf

    from speechperf.meters import speech_quality

    waves, references = {}, {}
    for path in sorted(Path(variant_dir).glob("*_pred.wav")):
        audio, rate = sf.read(str(path), dtype="float32")
        waves[path.name] = (audio, int(rate))
        ref = Path(fp32_dir) / path.name
        if against_fp32 and ref.exists():
            ref_audio, ref_rate = sf.read(str(ref), dtype="float32")
            references[path.name] = (ref_audio, int(ref_rate))
    if not waves:
        return None
    return speech_quality.score(
        waves, references or None, "fp32" if references else None, clean or None, "clean reference" if clean else None
    )


def token_agreement(reference: Mapping[str, Sequence[int]], variant: Mapping[str, Sequence[int]]) -> float | None:
    import jiwer

    ids = [k for k in reference if k in variant and len(reference[k])]
    if not ids:
        return None
    refs = [" ".join(f"t{t}" for t in reference[k]) for k in ids]
    hyps = [" ".join(f"t{t}" for t in variant[k]) for k in ids]
    return max(0.0, 1.0 - float(jiwer.wer(refs, hyps)))


def vad_agreement(
    reference: Mapping[str, Sequence], variant: Mapping[str, Sequence], seconds: Mapping[str, float]
) -> float | None:
    return frame_agreement(reference, variant, seconds)[0]


def snr_db(reference: np.ndarray, variant: np.ndarray) -> float | None:
    """SNR of ``variant`` against ``reference`` over their common length (speechperf.meters.fidelity.snr_db_of)."""
    n = min(reference.size, variant.size)
    ref, var = reference[:n].astype(np.float64), variant[:n].astype(np.float64)
    return snr_db_of(float(np.sum(ref**2)), float(np.sum((ref - var) ** 2)))


def waveform_snr(reference_dir: Path, variant_dir: Path) -> tuple[float | None, str]:
    """SNR over every dumped waveform pair (signal and noise summed over the dataset) and a note on lengths."""
    import soundfile as sf

    signal = noise = 0.0
    differ = 0
    pairs = sorted(Path(reference_dir).glob("*_pred.wav"))
    for ref_path in pairs:
        var_path = Path(variant_dir) / ref_path.name
        if not var_path.exists():
            continue
        ref, _ = sf.read(str(ref_path), dtype="float64")
        var, _ = sf.read(str(var_path), dtype="float64")
        differ += ref.size != var.size
        n = min(ref.size, var.size)
        signal += float(np.sum(ref[:n] ** 2))
        noise += float(np.sum((ref[:n] - var[:n]) ** 2))
    if signal == 0:
        return None, "no waveforms to compare"
    note = f"{differ} of {len(pairs)} waveforms differ in length" if differ else ""
    return snr_db_of(signal, noise), note


def outputs_of(run_data: dict, key: str) -> dict[str, Any]:  # token lists, texts, segments: by key
    return {sid: out[key] for sid, out in run_data["result"]["outputs"].items() if key in out}


def stage_fidelity(
    role: str,
    fp32_run: dict,
    variant_run: dict,
    references,
    seconds: Mapping[str, float],
    fp32_waves: Path | None,
    variant_waves: Path | None,
    graph_rel_diff: float | None,
    language: str | None = None,
    task: str | None = None,
    src_lang: str | None = None,
) -> Fidelity:
    """The fidelity of the last stage's outputs (what the benchmark's final outputs are); ``references`` is a
    speechperf.data.references.References or None."""
    if role in TEXT_ROLES:
        key = "units" if role == "s2u" else "tokens"
        agreement = token_agreement(outputs_of(fp32_run, key), outputs_of(variant_run, key))
        quality = None
        texts = outputs_of(variant_run, "text")
        if references is not None and texts:
            quality = _text_quality(role, references, texts, task, src_lang, language)
        return Fidelity("tokens", agreement, quality)
    if role == "vad":
        return Fidelity(
            "vad", vad_agreement(outputs_of(fp32_run, "segments"), outputs_of(variant_run, "segments"), seconds)
        )
    if role in SPEECH_ROLES and fp32_waves is not None and variant_waves is not None:
        value, note = waveform_snr(fp32_waves, variant_waves)
        return Fidelity("snr", value, detail=note)
    return Fidelity("graphs", graph_rel_diff)


def _text_quality(role, references, texts, task, src_lang, language):
    """The last stage's text against the references of what it puts out (speechperf.benchmark.text_reference:
    src_text for a transcript, tgt_text for a translation); None where the dataset has none of that kind."""
    from speechperf.benchmark import text_reference as tr
    from speechperf.errors import SpeechperfError
    from speechperf.meters.quality import score_texts

    kind = tr.kind_of(role, (), task)
    try:
        chosen = tr.reference_for(kind, references, "the last stage")
    except SpeechperfError:
        return None
    ids = [sid for sid in chosen.texts if sid in texts]
    languages = tr.languages(kind, ids, references, {}, task, src_lang, language)
    metric = "bleu" if kind == tr.TARGET else "wer"
    return score_texts("total", metric, ids, chosen.texts, texts, languages, False, reference=chosen.where)


def graph_difference(
    fp32_outputs: Sequence[Mapping[str, np.ndarray]], variant_outputs: Sequence[Mapping[str, np.ndarray]]
) -> float:
    """max |variant - fp32| / max(1e-12, max |fp32|) over the float outputs of paired calls."""
    worst = 0.0
    for ref, var in zip(fp32_outputs, variant_outputs):
        for name, r in ref.items():
            r = np.asarray(r)
            if not np.issubdtype(r.dtype, np.floating) or name not in var:
                continue
            v = np.asarray(var[name], dtype=np.float64)
            if v.shape != r.shape:
                return math.inf
            scale = max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-12)
            worst = max(worst, float(np.max(np.abs(v - r))) / scale if r.size else 0.0)
    return worst
