"""The analytic FLOP count of one model at one input is the same on torch, paddle and onnxruntime.

Each model is built in torch, its weights are copied into the same architecture in paddle (outputs must match, so
the models really are the same), and torch exports it to ONNX. The counts must be equal, and equal to the formula.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("paddle")

from speechperf.backend import ModelSpec, TensorInfo  # noqa: E402
from speechperf.backends.paddle import import_paddle  # noqa: E402
from speechperf.registry import get_backend  # noqa: E402

paddle = import_paddle()
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]  # five ONNX exports: about 20 s


# --- the same models in torch and paddle -------------------------------------------------------------------------


class TorchModel(torch.nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        if kind == "matmul":
            self.lin = torch.nn.Linear(16, 32)
        elif kind == "conv":
            self.conv = torch.nn.Conv1d(8, 16, 3, padding=1)
        elif kind == "lstm":
            self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        elif kind == "mha":
            self.mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)
        else:  # all of them in a row, plus a functional matmul
            self.lin = torch.nn.Linear(8, 16)
            self.conv = torch.nn.Conv1d(16, 16, 3, padding=1)
            self.lstm = torch.nn.LSTM(16, 16, batch_first=True, bidirectional=True)
            self.mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        if self.kind == "matmul":
            return self.lin(x)
        if self.kind == "conv":
            return self.conv(x)
        if self.kind == "lstm":
            return self.lstm(x)[0]
        if self.kind == "mha":
            return self.mha(x, x, x, need_weights=False)[0]
        y = self.conv(self.lin(x).transpose(1, 2)).transpose(1, 2)
        y = self.mha(*(self.lstm(y)[0],) * 3, need_weights=False)[0]
        return torch.matmul(y, y.transpose(1, 2))


class PaddleModel(paddle.nn.Layer):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        nn = paddle.nn
        if kind == "matmul":
            self.lin = nn.Linear(16, 32)
        elif kind == "conv":
            self.conv = nn.Conv1D(8, 16, 3, padding=1)
        elif kind == "lstm":
            self.lstm = nn.LSTM(8, 16, num_layers=2, direction="bidirect")
        elif kind == "mha":
            self.mha = nn.MultiHeadAttention(32, 4)
        else:
            self.lin = nn.Linear(8, 16)
            self.conv = nn.Conv1D(16, 16, 3, padding=1)
            self.lstm = nn.LSTM(16, 16, direction="bidirect")
            self.mha = nn.MultiHeadAttention(32, 4)

    def forward(self, x):
        if self.kind == "matmul":
            return self.lin(x)
        if self.kind == "conv":
            return self.conv(x)
        if self.kind == "lstm":
            return self.lstm(x)[0]
        if self.kind == "mha":
            return self.mha(x, x, x)
        y = self.conv(self.lin(x).transpose([0, 2, 1])).transpose([0, 2, 1])
        y = self.lstm(y)[0]
        y = self.mha(y, y, y)
        return paddle.matmul(y, y, transpose_y=True)


def paddle_state(module: torch.nn.Module) -> dict[str, np.ndarray]:
    """torch weights in paddle's names and layouts (Linear transposed, MHA's packed in-projection split)."""
    state = {}
    for name, value in module.state_dict().items():
        value = value.numpy()
        prefix, _, leaf = name.rpartition(".")
        if prefix.endswith("mha") and leaf.startswith("in_proj_"):
            for part, chunk in zip("qkv", np.split(value, 3)):
                state[f"{prefix}.{part}_proj.{leaf[8:]}"] = chunk.T if chunk.ndim == 2 else chunk
        elif (prefix.endswith("lin") or prefix.endswith("out_proj")) and leaf == "weight":
            state[name] = value.T
        else:
            state[name] = value
    return state


INPUTS = {"matmul": (2, 7, 16), "conv": (2, 8, 20), "lstm": (2, 6, 8), "mha": (2, 6, 32), "all": (2, 5, 8)}
# 1 multiply-add = 2 FLOPs; only matrix products count (see speechperf.meters.flops).
EXPECTED = {
    "matmul": 2 * (2 * 7) * 16 * 32,
    "conv": 2 * (2 * 16 * 20) * (8 * 3),
    # 2 layers x 2 directions: weights applied at every step of every sequence.
    "lstm": 2 * (2 * 6) * (2 * (64 * 8 + 64 * 16) + 2 * (64 * 32 + 64 * 16)),
    # 4 projections + QK^T + AV over 4 heads of 8.
    "mha": 4 * 2 * (2 * 6) * 32 * 32 + 2 * 2 * (2 * 4 * 6 * 6 * 8),
}


@pytest.fixture(scope="module", params=list(INPUTS))
def sessions(request, tmp_path_factory):
    from speechperf.backends.paddle.session import LayerSession
    from speechperf.backends.torch.session import TorchSession

    kind = request.param
    torch.manual_seed(0)
    tmodel = TorchModel(kind).eval()
    pmodel = PaddleModel(kind)
    pmodel.set_state_dict({k: paddle.to_tensor(v) for k, v in paddle_state(tmodel).items()})
    pmodel.eval()
    x = np.random.default_rng(0).standard_normal(INPUTS[kind]).astype(np.float32)
    path = tmp_path_factory.mktemp(kind) / f"{kind}.onnx"
    # The legacy exporter is fast; it fixes these shapes, which is the input counted here.
    torch.onnx.export(tmodel, (torch.from_numpy(x),), str(path), input_names=["x"], output_names=["y"], dynamo=False)
    io = ((TensorInfo("x", "float32"),), (TensorInfo("y"),))
    return (
        kind,
        x,
        {
            "torch": TorchSession(tmodel, *io, "cpu"),
            "paddle": LayerSession(pmodel, *io, "cpu"),
            "onnxruntime": get_backend("onnxruntime").load(ModelSpec(path=path)),
        },
    )


def test_models_are_the_same_on_every_backend(sessions):
    kind, x, by_backend = sessions
    outputs = {name: s({"x": x})["y"] for name, s in by_backend.items()}
    np.testing.assert_allclose(outputs["paddle"], outputs["torch"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs["onnxruntime"], outputs["torch"], rtol=1e-4, atol=1e-5)


def test_analytic_count_is_equal_on_torch_paddle_and_onnxruntime(sessions):
    kind, x, by_backend = sessions
    counts = {name: get_backend(name).count_flops(s, {"x": x}) for name, s in by_backend.items()}
    totals = {name: c.total for name, c in counts.items()}
    assert len(set(totals.values())) == 1, totals
    assert all(c.source == "analytic" for c in counts.values())
    if kind in EXPECTED:
        assert totals["torch"] == EXPECTED[kind]
    else:
        assert totals["torch"] == sum(EXPECTED_PARTS_ALL)


# The combined model, part by part: lin, conv, 1-layer bidirectional LSTM, MHA, and y @ y^T.
EXPECTED_PARTS_ALL = (
    2 * 10 * 8 * 16,
    2 * (2 * 16 * 5) * (16 * 3),
    2 * 10 * 2 * (64 * 16 + 64 * 16),
    4 * 2 * 10 * 32 * 32 + 2 * 2 * (2 * 4 * 5 * 5 * 8),
    2 * (2 * 5 * 5) * 32,
)


def test_uncounted_ops_are_listed_and_counted_ops_are_not(sessions):
    kind, x, by_backend = sessions
    counts = {name: get_backend(name).count_flops(s, {"x": x}) for name, s in by_backend.items()}
    assert not {"MatMul", "Gemm", "Conv", "LSTM"} & set(counts["onnxruntime"].uncounted)
    assert not {"pd_op.matmul", "pd_op.conv2d", "pd_op.rnn"} & set(counts["paddle"].uncounted)
    assert not {"aten.mm", "aten.addmm", "aten.bmm", "aten.convolution", "aten.lstm"} & set(counts["torch"].uncounted)
    if kind in ("mha", "all"):  # softmax is not a matrix product: listed where it is a separate op
        assert "Softmax" in counts["onnxruntime"].uncounted
        assert "pd_op.softmax" in counts["paddle"].uncounted
