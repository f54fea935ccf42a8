"""Accuracy mode's score: the outputs LoadGen's AccuracyOnly test collected, scored by bench's quality pass, and
MLPerf's rule against the fp32 reference's figure (``--reference-quality``): at least 99% of its accuracy."""

from __future__ import annotations

from typing import Any

#: MLPerf's accuracy rule: at least this share of the fp32 reference's accuracy.
SHARE = 0.99


def score(sut, dataset, references, general, backend, workdir, reference_quality: float | None) -> dict[str, Any]:
    """The document's ``quality``: the console's ``lines``, each stage's ``scores``, and the ``verdict`` (PASS,
    FAIL, or None without a reference figure)."""
    from speechperf.benchmark import quality as quality_pass
    from speechperf.benchmark.report import SPEECH_COLUMNS

    result = quality_pass.measure(_Kept(sut, dataset), dataset, references, general, backend, workdir)
    lines = []
    scores = []
    verdicts: list[bool] = []
    for stage_score in result.scores:
        lines.append(f"accuracy: {stage_score.stage}: {stage_score.described()} ({stage_score.samples} sample(s))")
        primary = stage_score.primary
        speech = stage_score.speech  # DNSMOS, MCD, PESQ / STOI of speech output, as bench's row holds them
        figures = {k: getattr(speech, k) for k in SPEECH_COLUMNS if speech and getattr(speech, k) is not None}
        scores.append({"stage": stage_score.stage, "headline": stage_score.headline(), "primary": primary, **figures})
        if reference_quality is not None and primary is not None:
            ok, line = verdict(primary, reference_quality)
            verdicts.append(ok)
            lines.append(line)
    lines += [f"accuracy: note: {n}" for n in result.notes]
    return {"lines": lines, "scores": scores, "verdict": None if not verdicts else "PASS" if all(verdicts) else "FAIL"}


def verdict(primary: tuple[str, float], reference_quality: float) -> tuple[bool, str]:
    """MLPerf's rule on word accuracy (100 - WER), and on the figure itself where higher is better (in points:
    WER %, BLEU, agreement %)."""
    name, value = primary
    lower_is_better = name == "WER"
    accuracy = 100 - value if lower_is_better else value
    ref_accuracy = 100 - reference_quality if lower_is_better else reference_quality
    ok = accuracy >= SHARE * ref_accuracy
    return ok, (
        f"accuracy: {'PASS' if ok else 'FAIL'}: >= {SHARE:.0%} of the fp32 reference "
        f"({name} {value:.2f} vs the reference's {reference_quality:.2f})"
    )


class _Kept:
    """The benchmark's face the quality pass reads (stages, sample ids, every stage's outputs, and the inputs: the
    first stage's, which a speech stage's MCD against its input recording reads), from the SUT."""

    def __init__(self, sut, dataset):
        self.stages = tuple(sut.instances[0])
        self.sample_ids = tuple(s.id for s in dataset)
        self._outputs = [{dataset[i].id: outs[n] for i, outs in sut.outputs.items()} for n in range(len(self.stages))]
        first = {dataset[i].id: sut.inputs[i] for i in sut.outputs}
        self.inputs = [first] + [{} for _ in self.stages[1:]]  # later stages' inputs are not kept by the SUT
        if len(self.stages) == 1:  # its untimed step (a mask's resynthesis into speech), as bench's kept outputs
            self._outputs[0] = {sid: self.stages[0].finish(first[sid], out) for sid, out in self._outputs[0].items()}

    def stage_outputs(self):
        return self._outputs
