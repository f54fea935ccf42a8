"""How close a variant's outputs stay to fp32, per stage type, from what the benchmark runs produced.

- text (s2t, mt, s2u): token agreement with fp32, ``1 - edit distance / fp32 tokens`` over the dataset (jiwer over
  the id sequences; units for s2u); and, where the stage decodes text and the dataset has references, the quality
  meter's scores (speechperf.meters.quality: WER / CER after Whisper's normalizer, BLEU / chrF for MT), the same
  figures ``speechperf bench`` prints.
- vad: decision agreement with fp32: the fraction of 32 ms windows (the silero hop) that both call speech or both
  call silence, over the whole dataset (speechperf.meters.vad_score).
- speech output (tts, unit vocoder, s2s): SNR of the variant's waveform against fp32's, in dB, over the samples
  both produced (a length difference is reported), with the SNR formula of speechperf.meters.fidelity; every other
  float output (and the waveforms again, as arrays) is compared by that meter itself (optimize's
  ``float outputs vs fp32`` column).
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
from speechperf.meters.vad_score import frame_agreement

TEXT_ROLES = ("s2t", "mt", "s2u")
SPEECH_ROLES = ("tts", "unit_vocoder", "s2s")


@attrs.frozen
class QualityBudget:
    """How much quality a variant may lose against fp32 and still count as a speed-up ("ok")."""

    max_wer_increase: float | None = 1.0  # WER points (absolute)
    max_bleu_drop: float | None = 1.0  # BLEU points
    min_agreement: float | None = None  # token or VAD agreement with fp32, 0..1


@attrs.frozen
class Fidelity:
    kind: str  # "tokens", "vad", "snr", "graphs"
    value: float | None  # the headline number: agreement (0..1) or SNR (dB)
    quality: QualityScore | None = None  # against the references, where the dataset has them
    detail: str = ""

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
        return ", ".join(parts)


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
    return found


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
