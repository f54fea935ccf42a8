"""Each backend's analytic FLOP counter on what it has to count itself, and each backend's device memory."""

from __future__ import annotations

import numpy as np
import pytest

from speechperf.backend import ModelSpec, TensorInfo
from speechperf.errors import SpeechperfError
from speechperf.meters.flops import KnownGraph
from speechperf.registry import get_backend


@pytest.mark.parametrize("backend", ["torch", "paddle", "onnxruntime"])
@pytest.mark.parametrize("kind", ["matmul", "conv"])
def test_known_graph_counts_its_formula(backend, kind):
    pytest.importorskip({"onnxruntime": "onnxruntime"}.get(backend, backend))
    graph = KnownGraph(kind, m=5, n=7, k=3, t=11)
    b = get_backend(backend)
    session = b.known_session(graph)
    feeds = graph.feeds()
    np.testing.assert_allclose(session(feeds)["y"], graph.reference(feeds), rtol=1e-4, atol=1e-4)
    count = b.count_flops(session, feeds)
    assert count.total == graph.expected and count.source == "analytic"
    assert count.by_kind == {"matmul" if kind == "matmul" else "conv": graph.expected}


# --- torch: what FlopCounterMode counts as 0 on the CPU ---------------------------------------------------------


@pytest.fixture(scope="module")
def torch_count():
    torch = pytest.importorskip("torch")
    from speechperf.backends.torch.flops import module_flops

    torch.manual_seed(0)
    return torch, module_flops


def test_torch_lstm_and_gru_are_counted(torch_count):
    torch, module_flops = torch_count
    lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True).eval()
    x = torch.rand(3, 7, 8)
    weights = sum(p.numel() for name, p in lstm.named_parameters() if name.startswith("weight"))
    assert module_flops(lstm, x).total == 2 * 3 * 7 * weights
    gru = torch.nn.GRU(8, 16).eval()  # time-major, unbatched input counts steps only
    assert module_flops(gru, torch.rand(7, 8)).total == 2 * 7 * (48 * 8 + 48 * 16)


def test_torch_fused_attention_paths_are_counted(torch_count):
    torch, module_flops = torch_count
    q, k = torch.rand(2, 4, 6, 8), torch.rand(2, 4, 9, 8)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    count = module_flops(lambda a, b: sdpa(a, b, b), q, k)
    assert count.total == 2 * (2 * 4) * 6 * 9 * (8 + 8)
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()  # inference: the native fast path
    x = torch.rand(2, 6, 32)
    assert module_flops(lambda t: mha(t, t, t, need_weights=False), x).total == 4 * 2 * 12 * 32 * 32 + 2 * 2 * (
        2 * 6 * 6 * 32
    )
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    expected = 4 * 2 * 12 * 32 * 32 + 2 * 2 * (2 * 6 * 6 * 32) + 2 * 12 * (32 * 64 * 2)
    assert module_flops(layer, x).total == expected


def test_torch_lists_uncounted_ops(torch_count):
    torch, module_flops = torch_count
    lin = torch.nn.Linear(4, 3).eval()
    count = module_flops(lambda t: torch.softmax(torch.relu(lin(t)), -1), torch.rand(2, 4))
    assert count.total == 2 * 2 * 4 * 3
    assert "aten.relu" in count.uncounted and "aten._softmax" in count.uncounted
    assert not any("addmm" in op or "view" in op for op in count.uncounted)


def test_torch_counts_a_torchscript_module(torch_count):
    torch, module_flops = torch_count
    scripted = torch.jit.script(torch.nn.Linear(6, 5).eval())
    assert module_flops(scripted, torch.rand(4, 6)).total == 2 * 4 * 6 * 5


# --- onnxruntime: the graph walk ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def onnx_tools():
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    return onnx


def _onnx_model(onnx, nodes, inputs, initializers, path):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return get_backend("onnxruntime").load(ModelSpec(path=path))


def test_onnx_counts_at_the_actual_input_shapes(onnx_tools, tmp_path):
    from onnx import helper, numpy_helper

    w = numpy_helper.from_array(np.ones((16, 4), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Softmax", ["h"], ["y"])]
    session = _onnx_model(onnx_tools, nodes, [("x", ["batch", "time", 16])], [w], tmp_path / "m.onnx")
    counter = get_backend("onnxruntime")
    for batch, time in ((1, 5), (3, 11)):
        count = counter.count_flops(session, {"x": np.zeros((batch, time, 16), np.float32)})
        assert count.total == 2 * batch * time * 16 * 4
        assert count.uncounted == ("Softmax",)


def test_onnx_lstm_gemm_and_run_time_shapes(onnx_tools, tmp_path):
    """A Reshape whose target comes from a graph input cannot be inferred statically: the graph is run instead."""
    from onnx import TensorProto, helper, numpy_helper

    h = 6
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((1, 4 * h, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal((1, 4 * h, h)).astype(np.float32), "R"),
        numpy_helper.from_array(rng.standard_normal((h, 2)).astype(np.float32), "G"),
    ]
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R"], ["seq", "h_last"], hidden_size=h),  # seq: [T, 1, B, H]
        helper.make_node("Cast", ["shape_in"], ["target"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["seq", "target"], ["flat"]),  # [T*B, H], known only at run time
        helper.make_node("Gemm", ["flat", "G"], ["y"]),
    ]
    session = _onnx_model(onnx_tools, nodes, [("x", ["T", "B", 3]), ("shape_in", [2])], inits, tmp_path / "l.onnx")
    feeds = {"x": np.zeros((5, 2, 3), np.float32), "shape_in": np.array([10, h], np.float32)}
    count = get_backend("onnxruntime").count_flops(session, feeds)
    assert count.by_kind == {"rnn": 2 * 5 * 2 * (4 * h * 3 + 4 * h * h), "matmul": 2 * 10 * h * 2}
    assert count.total == sum(count.by_kind.values())


def test_onnx_count_of_feeds_the_graph_cannot_take_is_one_line(onnx_tools, tmp_path):
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Cast", ["target"], ["shape"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("MatMul", ["r", "r"], ["y"]),
    ]
    session = _onnx_model(onnx_tools, nodes, [("x", ["n"]), ("target", [2])], [], tmp_path / "bad.onnx")
    with pytest.raises(SpeechperfError) as info:
        get_backend("onnxruntime").count_flops(
            session, {"x": np.zeros(6, np.float32), "target": np.array([4, 4], np.float32)}
        )
    assert "cannot count FLOPs" in str(info.value) and "\n" not in str(info.value)


# --- paddle: the program walk ---------------------------------------------------------------------------------


def test_paddle_counts_functional_code_and_lists_uncounted(tmp_path):
    pytest.importorskip("paddle")
    from speechperf.backends.paddle import import_paddle
    from speechperf.backends.paddle.session import LayerSession

    paddle = import_paddle()

    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.gru = paddle.nn.GRU(4, 8)
            self.up = paddle.nn.Conv1DTranspose(8, 2, 3, stride=2)

        def forward(self, x):
            y = self.gru(x)[0]  # [B, T, 8]
            y = paddle.nn.functional.gelu(paddle.bmm(y, y.transpose([0, 2, 1])) @ y)
            return self.up(y.transpose([0, 2, 1]))

    session = LayerSession(Net(), (TensorInfo("x", "float32"),), (TensorInfo("y"),), "cpu")
    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    session({"x": x})
    count = get_backend("paddle").count_flops(session, {"x": x})
    gru = 2 * 2 * 5 * (24 * 4 + 24 * 8)
    matmuls = 2 * (2 * 5 * 5) * 8 + 2 * (2 * 5 * 8) * 5
    deconv = 2 * 2 * 5 * (8 * 2 * 3)
    assert count.by_kind == {"rnn": gru, "matmul": matmuls, "conv": deconv}
    assert "pd_op.gelu" in count.uncounted


def test_paddle_inference_model_file_is_refused_with_the_way_out():
    pytest.importorskip("paddle")
    from speechperf.backends.paddle.flops import count_flops

    class Predictor:
        inputs = (TensorInfo("x", "float32"),)

    with pytest.raises(SpeechperfError, match="load the same model from its layer factory"):
        count_flops(Predictor(), {"x": np.zeros((1, 2), np.float32)})


# --- device memory --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["torch", "paddle", "onnxruntime"])
def test_device_memory_says_clearly_when_there_is_none(backend):
    pytest.importorskip({"onnxruntime": "onnxruntime"}.get(backend, backend))
    b = get_backend(backend)
    cpu = b.device_memory("cpu")
    assert not cpu.available and "no separate device allocator" in cpu.reason
    cuda = b.device_memory("cuda")
    if cuda.available:
        cuda.reset()
        assert cuda.peak_bytes() >= 0
        return
    expected = {
        "torch": "sees no CUDA device",
        "paddle": "has no usable GPU",
        "onnxruntime": "does not expose its cuda allocator's peak",
    }[backend]
    assert expected in cuda.reason
    with pytest.raises(RuntimeError, match=expected):
        cuda.peak_bytes()
