"""What a stage's output is (``output_kind``): declared in the config or the role's; only a waveform is audio. A
speech-enhancement ONNX whose output is a gain mask (built here with onnx.helper) has its RTF over the seconds of
the audio it was given, whatever its bin count, and nothing is dumped as wav."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.config import load_config
from speechperf.config.schema import ROLE_OUTPUT_KINDS, StageConfig, resolve_output_kind
from speechperf.errors import SpeechperfError

SECONDS = 0.5  # each generated utterance
SAMPLES = 2


@pytest.mark.parametrize(
    ("role", "kind"),
    [("s2t", "tokens"), ("mt", "tokens"), ("s2u", "tokens"), ("vad", "probabilities"), ("tts", "waveform"),
     ("unit_vocoder", "waveform"), ("s2s", "waveform")],
)  # fmt: skip
def test_a_stage_without_a_declared_kind_puts_out_its_roles(role, kind):
    assert resolve_output_kind(None, role) == kind == StageConfig().output_kind_as(role)
    assert resolve_output_kind("mask", role) == "mask"  # a declared kind wins
    assert set(ROLE_OUTPUT_KINDS) == {"s2t", "mt", "s2u", "vad", "tts", "unit_vocoder", "s2s"}


def test_rtf_side_follows_the_output_kind():
    from speechperf.benchmark.stage import Stage

    class Bare(Stage):
        def __init__(self, role, kind=None):
            self.role, self.label, self.sessions, self.declared_output_kind = role, "bare", {}, kind

        def run(self, sessions, inp):
            return {}

    inp = {"audio": np.zeros(8000, np.float32), "sample_rate": 16000}
    mask = {"outputs": {"mask": np.zeros((1, 50, 257), np.float32)}}
    assert Bare("s2s").audio_side == "output" and Bare("tts").audio_side == "output"
    assert Bare("s2s", "mask").audio_side == "input" and Bare("s2s", "spectrogram").audio_side == "input"
    assert Bare("s2s", "mask").audio_seconds(inp, mask) == pytest.approx(0.5)  # the input's, not 50 * 257 samples
    assert Bare("tts", "spectrogram").audio_seconds({"tokens": np.arange(3)}, mask) is None  # no audio to divide by


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ("{model: tts, output_kind: mask}", "applies to your own model file (path)"),
        ("{path: m.onnx, inputs: [{name: x, source: audio}], outputs: [y], output_kind: tokens}",
         "'tokens' is not an output of a s2s stage; allowed: waveform, mask, spectrogram, features"),
        ("{path: m.onnx, inputs: [{name: x, source: audio}], outputs: [y], output_kind: mask, "
         "output_sample_rate: 8000}", "output_sample_rate applies to a waveform output; this stage's output_kind"),
        ("{path: m.onnx, inputs: [{name: x, source: audio}], outputs: [y], output_kind: noise}",
         "allowed: waveform, mask, spectrogram, features, tokens, probabilities"),
    ],
)  # fmt: skip
def test_a_kind_that_does_not_fit_is_one_line_naming_the_key(tmp_path, stage, message):
    model_type = "TTS" if "model: tts" in stage else "S2S"
    config = tmp_path / "c.yaml"
    config.write_text(f"general: {{model_type: {model_type}}}\nstage1: {stage}\n")
    with pytest.raises(SpeechperfError, match="output_kind|output_sample_rate") as info:
        load_config(config)
    assert message in str(info.value) and "\n" not in str(info.value)


def mask_model(path: Path, bins: int, mels: int = 80) -> Path:
    """A gain-mask network: log-mel features [1, frames, mels] -> sigmoid(features W) [1, frames, bins]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).normal(0, 0.1, (mels, bins)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["feats", "w"], ["logits"]), helper.make_node("Sigmoid", ["logits"], ["mask"])],
        "mask",
        [helper.make_tensor_value_info("feats", TensorProto.FLOAT, [1, "frames", mels])],
        [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, "frames", bins])],
        [numpy_helper.from_array(weight, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("bins", [161, 257])
def test_a_mask_model_has_its_rtf_over_its_input_seconds_and_dumps_no_wav(tmp_path, bins):
    pytest.importorskip("onnxruntime")
    model = mask_model(tmp_path / f"enhance{bins}.onnx", bins)
    config = tmp_path / "enhance.yaml"
    config.write_text(
        f"general: {{model_type: S2S, generated_seconds: [{SECONDS}, {SECONDS}], dataset_size: {SAMPLES}}}\n"
        f"stage1: {{path: {model}, inputs: [{{name: feats, source: features}}], outputs: [mask], "
        "output_kind: mask}\n"
    )
    out, dump = tmp_path / "r.json", tmp_path / "dump"
    done = CliRunner().invoke(
        main,
        ["bench", "-b", "onnxruntime", "--config", str(config), "--warmup", "0", "--repeat", "1", "--meters",
         "runtime", "--dump-speech-waveforms-dir", str(dump), "-o", str(out), "--quiet"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    rtf = data["result"]["stages"][0]["rtf"]
    assert rtf["audio"] == "input"
    # The seconds given, not the mask's element count over the rate (which would be 1.6x more at 257 bins).
    assert rtf["total_audio_s"] == pytest.approx(SAMPLES * SECONDS, rel=0.01)
    assert rtf["rtf"] == pytest.approx(rtf["total_runtime_s"] / rtf["total_audio_s"])
    for described in data["result"]["outputs"].values():
        assert "waveform_samples" not in described and described["outputs"]["mask"][-1] == bins
    assert not list(dump.glob("*.wav"))  # a mask is no audio
