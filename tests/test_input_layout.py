"""The layout a user's model file takes its inputs in (`stageN.inputs[].layout`), checked at load against the shapes
ONNX and paddle inference files declare, and the decisive line of a framework's multi-line error."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.backend import TensorInfo
from speechperf.benchmark.layout import arrange, check_layout
from speechperf.benchmark.stage import StageError
from speechperf.cli import main
from speechperf.config.load import ConfigError, parse_config
from speechperf.errors import decisive_line, error_detail
from speechperf.meters.samples import failure

LAYOUT_ERROR = (
    "stage1.inputs[0] 'mel' (features) is fed as BTC [1, ?, 80]; the model declares 'mel' as [1, 80, ?], "
    "which takes layout BCT (channels_first): set layout: channels_first"
)


def test_arrange_orders_adds_and_drops_axes():
    feats = np.arange(12, dtype=np.float32).reshape(4, 3)  # 4 frames of 3 bins
    assert arrange(feats, "features", None).shape == (1, 4, 3)
    first = arrange(feats, "features", "BCT")
    assert first.shape == (1, 3, 4) and np.array_equal(first[0], feats.T)
    assert arrange(feats, "features", "CT").shape == (3, 4)
    audio = np.zeros(100, np.float32)
    assert arrange(audio, "audio", None).shape == (1, 100)
    assert arrange(audio, "audio", "BCT").shape == (1, 1, 100)
    assert arrange(audio, "audio", "T").shape == (100,)


def test_check_layout_names_the_layout_or_the_channel_size_that_fits():
    mel = TensorInfo("mel", "float32", (1, 80, "T"))
    check_layout(mel, "features", "BCT", 80, "mel", "features.n_mels")  # fits
    check_layout(TensorInfo("mel", "float32", (None, None, None)), "features", None, 80, "mel", "n")  # any layout
    with pytest.raises(StageError, match=re.escape("which takes layout BCT (channels_first): set layout: ")):
        check_layout(mel, "features", None, 80, "mel", "features.n_mels")
    with pytest.raises(
        StageError, match=re.escape("80 channels in layout BCT (channels_first), not 64: set features.n_mels: 80")
    ):
        check_layout(mel, "features", "BCT", 64, "mel", "features.n_mels")
    with pytest.raises(StageError, match=re.escape("which takes layout BCT (channels_first)")):
        check_layout(TensorInfo("wave", None, (1, 1, "N")), "audio", None, None, "wave", "n")
    with pytest.raises(StageError, match=re.escape("as [?, ?, ?, ?], which no layout of features (TC) fits")):
        check_layout(TensorInfo("x", None, (None,) * 4), "features", None, 80, "x", "n")
    # Whisper's encoder takes a fixed 3000 frames: known from features.num_frames, BCT fits surely.
    check_layout(TensorInfo("mel", None, (1, 80, 3000)), "features", "BCT", 80, "mel", "n", frames=3000)


@pytest.mark.parametrize(
    "layout, message",
    [
        ("BT", "layout = 'BT' leaves out axis C of features (TC)"),
        ("BXT", "layout = 'BXT'; allowed: letters B, T, C each at most once"),
        ("BTT", "layout = 'BTT'; allowed"),
    ],
)
def test_bad_layouts_are_refused_by_the_config(layout, message):
    text = f"general: {{model_type: S2S}}\nstage1: {{path: m.onnx, inputs: [{{name: x, source: features, layout: {layout}}}], outputs: [y]}}"
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(text, "<t>")
    length = "general: {model_type: S2S}\nstage1: {path: m.onnx, inputs: [{name: n, source: feature_length, layout: B}], outputs: [y]}"
    with pytest.raises(
        ConfigError, match="a layout orders an audio, features or tokens input; this input is feature_length"
    ):
        parse_config(length, "<t>")


def onnx_conv(path, channels_axis_fixed=True):
    """A conv_pre over 80 mel channels first: [1, 80, T] -> [1, 8, T]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(0).normal(size=(8, 80, 7)).astype(np.float32), "w")
    node = helper.make_node("Conv", ["mel", "w"], ["wave"], pads=[3, 3])
    shape = [1, 80, "T"] if channels_axis_fixed else [1, "C", "T"]
    graph = helper.make_graph(
        [node],
        "conv_pre",
        [helper.make_tensor_value_info("mel", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, 8, "T"])],
        [weight],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def paddle_conv(folder, shape):
    """The same conv_pre as a paddle inference program, its input declared as ``shape``."""
    import paddle

    class ConvPre(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv_pre = paddle.nn.Conv1D(80, 8, 7, padding=3)

        def forward(self, mel):
            return self.conv_pre(mel)

    layer = ConvPre()
    layer.eval()
    paddle.jit.save(layer, str(folder / "model"), input_spec=[paddle.static.InputSpec(shape, "float32", "mel")])
    return folder / "model.json"


def s2s_config(tmp_path, model, layout=None, features="hifigan-16k", options="null"):
    mel = "{name: mel, source: features" + (f", layout: {layout}" if layout else "") + "}"
    config = tmp_path / "c.yaml"
    config.write_text(f"""
general: {{model_type: S2S, generated_seconds: [0.5, 0.5]}}
stage1: {{path: {model}, features: {features}, inputs: [{mel}], outputs: [wave], output_kind: features,
  options: {options}}}
""")
    return str(config)  # the conv's 8 channels are features, not speech (output_kind): kept as an output


def bench(*args):
    return CliRunner().invoke(main, ["bench", *args, "--dataset-size", "1", "--warmup", "0", "--quiet"])


@pytest.mark.parametrize("backend, api", [("onnxruntime", None), ("paddle", "predictor"), ("paddle", "jit")])
@pytest.mark.slow
def test_a_declared_shape_refuses_the_wrong_layout_at_load(tmp_path, backend, api):
    model = onnx_conv(tmp_path / "m.onnx") if backend == "onnxruntime" else paddle_conv(tmp_path, [1, 80, None])
    options = f"{{paddle: {{api: {api}}}}}" if api else "null"
    result = bench("-b", backend, "--config", s2s_config(tmp_path, model, options=options), "--meters", "runtime")
    assert result.exit_code == 2, result.output
    assert LAYOUT_ERROR in result.output and "Traceback" not in result.output
    fewer = s2s_config(tmp_path, model, "channels_first", "{preset: hifigan-16k, n_mels: 64}", options)
    result = bench("-b", backend, "--config", fewer, "--meters", "runtime")
    assert result.exit_code == 2
    assert "the model declares 'mel' as [1, 80, ?]: 80 channels in layout BCT (channels_first), not 64" in result.output
    out = tmp_path / "r.json"
    good = s2s_config(tmp_path, model, "channels_first", options=options)
    result = bench("-b", backend, "--config", good, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["result"]["outputs"]["gen0"]["outputs"]["wave"][:2] == [1, 8]


def test_a_paddle_multi_line_error_is_reported_by_its_decisive_line(tmp_path):
    """Declared without sizes, the program takes the wrong layout at load and fails inside the predictor with a
    message that starts with "In user code:"; its InvalidArgumentError and hint are what the console shows."""
    model = paddle_conv(tmp_path, [None, None, None])
    out = tmp_path / "r.json"
    result = bench("-b", "paddle", "--config", s2s_config(tmp_path, model), "--meters", "runtime", "-o", str(out))
    assert result.exit_code == 1, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("failed:"))
    assert "InvalidArgumentError: The number of input's channels should be equal to filter's channels" in line
    assert "[Hint: Expected input_channels == filter_channels * groups, but received input_channels:" in line
    assert "In user code" not in line and "(at /paddle" not in line
    failure_record = json.loads(out.read_text())["result"]["stages"][0]["failures"][0]
    assert "In user code:" in failure_record["detail"] and "operator < " in failure_record["detail"]


def test_decisive_lines_of_real_framework_errors(tmp_path):
    import onnxruntime as ort
    import torch

    conv = torch.jit.script(torch.nn.Conv1d(80, 8, 7))
    with pytest.raises(RuntimeError) as torch_error:
        conv(torch.zeros(1, 100, 80))
    assert str(torch_error.value).startswith("The following operation failed in the TorchScript interpreter.")
    assert decisive_line(torch_error.value) == (
        "RuntimeError: Given groups=1, weight of size [8, 80, 7], expected input[1, 100, 80] to have 80 channels, "
        "but got 100 channels instead"
    )
    record = failure("utt1", "runtime", torch_error.value)
    assert record.error == decisive_line(torch_error.value)  # the type is not said twice
    assert record.detail == error_detail(torch_error.value) and "Traceback of TorchScript" in record.detail

    session = ort.InferenceSession(str(onnx_conv(tmp_path / "m.onnx", channels_axis_fixed=False)))
    with pytest.raises(Exception) as ort_error:
        session.run(None, {"mel": np.zeros((1, 100, 50), np.float32)})
    assert decisive_line(ort_error.value).startswith("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code")
    with pytest.raises(Exception) as dims_error:
        ort.InferenceSession(str(onnx_conv(tmp_path / "f.onnx"))).run(None, {"mel": np.zeros((1, 100, 5), np.float32)})
    assert len(str(dims_error.value).splitlines()) > 1  # the axis and the sizes are on the second line
    assert "for the following indices index: 1 Got: 100 Expected: 80" in decisive_line(dims_error.value)


def test_error_detail_keeps_the_end_of_a_long_message():
    long = RuntimeError("frame\n" * 2000 + "RuntimeError: the cause")
    detail = error_detail(long, limit=400)
    assert len(detail) < 500 and detail.endswith("RuntimeError: the cause") and "characters cut" in detail
    assert decisive_line(long) == "RuntimeError: the cause"
    assert decisive_line(ValueError("one line only")) == "one line only"
