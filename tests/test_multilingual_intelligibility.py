"""Speech output in a language other than English is back-transcribed by the multilingual Whisper base of the zoo,
told the language, and scored after the basic normalizer; English keeps Whisper tiny.en. On real speech: Kokoro
speaking Brazilian Portuguese (the voice of configs/3StageS2ST-en-pt.yaml) as a TTS run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.benchmark.quality import asr_for
from speechperf.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("language", "model", "told"),
    [("en", "whisper-tiny-en", None), ("en-US", "whisper-tiny-en", None), ("pt-br", "whisper-base", "pt"),
     ("pt_BR", "whisper-base", "pt"), ("es", "whisper-base", "es")],
)  # fmt: skip
def test_english_speech_keeps_tiny_en_and_other_languages_get_whisper_base_told_the_language(language, model, told):
    got_model, name, got_told = asr_for(language)
    assert (got_model, got_told) == (model, told)
    assert name == ("Whisper tiny.en" if told is None else f"Whisper base, language {told}")


@pytest.mark.slow
def test_portuguese_speech_is_transcribed_in_portuguese_with_the_basic_normalizer(tmp_path):
    """One sentence of the pt-br smoke set said by Kokoro (pt-br): intelligibility through Whisper base told
    Portuguese, after the basic normalizer (accents kept), where Whisper tiny.en would hear English words."""
    import yaml

    cascade = yaml.safe_load((ROOT / "configs" / "3StageS2ST-en-pt.yaml").read_text())
    sentence = "O tempo está bom hoje."
    (tmp_path / "pt.txt").write_text(sentence + "\n")
    config = tmp_path / "tts.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "general": {"model_type": "TTS", "dataset_type": "text", "dataset_path": "pt.txt", "language": "pt-br"},
                "stage1": cascade["stage3"],
            }
        )
    )
    out = tmp_path / "r.json"
    done = CliRunner().invoke(
        main,
        ["bench", "-b", "onnxruntime", "--config", str(config), "--meters", "runtime,quality", "--warmup", "0",
         "--repeat", "1", "-o", str(out), "--save-text", str(tmp_path / "t.tsv")],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    score = next(s for s in json.loads(out.read_text())["result"]["quality"]["scores"] if s["stage"] == "total")
    print(score["asr"], score["normalizer"], score["wer"], (tmp_path / "t.tsv").read_text())
    assert score["metric"] == "intelligibility" and score["normalizer"] == "whisper-basic"
    assert score["asr"].startswith("Whisper base, language pt (whisper-base/base on onnxruntime)")
    assert score["wer"] <= 0.5  # the Portuguese is heard: English words for it would score near 1
    assert "needs a multilingual ASR" not in done.output
