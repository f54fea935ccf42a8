"""A user's ONNX TTS file with a constant input (Piper's ``scales`` float32[3], given as ``value:``) and a 22.05 kHz
output (``output_sample_rate``): bench feeds the constant, checks it against the model's declared shape, and
computes RTF over the output audio at 22.05 kHz."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.cli import main

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HOP = 2205  # output samples per token: 0.1 s at 22.05 kHz
RATE = 22050
TOKENS = {"a": 5, "b": 9}


@pytest.fixture
def piper_like(tmp_path, monkeypatch) -> Path:
    """y = tile(float(tokens) * scales[0], HOP): a waveform of HOP samples per token, needing both inputs."""
    nodes = [
        helper.make_node("Cast", ["tokens"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("Gather", ["scales", "zero"], ["noise_scale"], axis=0),
        helper.make_node("Mul", ["as_float", "noise_scale"], ["scaled"]),
        helper.make_node("Tile", ["scaled", "repeats"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "piper_like",
        [
            helper.make_tensor_value_info("tokens", TensorProto.INT64, [1, "n"]),
            helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None])],
        initializer=[
            numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
            numpy_helper.from_array(np.array([1, HOP], dtype=np.int64), "repeats"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, tmp_path / "tts.onnx")
    np.savez(tmp_path / "tokens.npz", **{k: np.arange(1, n + 1) for k, n in TOKENS.items()})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def config(folder: Path, scales: str) -> Path:
    path = folder / "tts.yaml"
    path.write_text(f"""general: {{model_type: TTS, dataset_type: npz, dataset_path: tokens.npz}}
stage1:
  path: tts.onnx
  output_sample_rate: {RATE}
  inputs:
    - {{name: tokens, source: tokens, dtype: int64}}
    - {{name: scales, value: {scales}}}
  outputs: [y]
""")
    return path


def test_constant_input_and_rtf_at_the_output_rate(piper_like):
    out, dump = piper_like / "r.json", piper_like / "wav"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "-b",
            "onnxruntime",
            "--config",
            str(config(piper_like, "[0.667, 1.0, 0.8]")),
            "--repeat",
            "3",
            "--meters",
            "runtime",
            "--quiet",
            "-o",
            str(out),
            "--dump-speech-waveforms-dir",
            str(dump),
            "--target-sr",
            str(RATE),
        ],
    )
    assert result.exit_code == 0, result.output
    stage = json.loads(out.read_text())["result"]["stages"][0]
    seconds = {k: n * HOP / RATE for k, n in TOKENS.items()}  # 0.5 s and 0.9 s of output audio
    runtime = {s["sample_id"]: float(np.median(s["ns"])) / 1e9 for s in stage["runtime"]["samples"]}
    assert stage["rtf"]["audio"] == "output"
    assert stage["rtf"]["total_audio_s"] == pytest.approx(1.4, rel=1e-12)
    assert stage["rtf"]["rtf"] == pytest.approx(sum(runtime.values()) / sum(seconds.values()), rel=1e-9)
    assert stage["rtf"]["per_sample"]["b"] == pytest.approx(runtime["b"] / 0.9, rel=1e-9)
    # at 16 kHz the same waveform would count as 1.93 s of audio: the RTF would be 38% too low
    assert stage["rtf"]["rtf"] * 1.4 / (14 * HOP / 16000) < stage["rtf"]["rtf"] / 1.3
    lengths = sorted(len(sf.read(p)[0]) for p in dump.glob("*.wav"))
    assert lengths == [5 * HOP, 9 * HOP]  # dumped at 22.05 kHz unresampled: the rate travelled with the waveform


def test_constant_of_the_wrong_shape_fails_before_measuring(piper_like):
    result = CliRunner().invoke(
        main, ["bench", "-b", "onnxruntime", "--config", str(config(piper_like, "[0.667, 1.0]")), "--quiet"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"Error: {piper_like / 'tts.yaml'}: stage1.inputs[1].value = [0.667, 1.0]: input 'scales' has size 2 on axis 0; expected 3 (3)"
    ]
