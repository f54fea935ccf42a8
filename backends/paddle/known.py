"""A session over a KnownGraph built with paddle (``speechperf check`` validates FLOPs and thread pinning on it)."""

from __future__ import annotations

from speechperf.backends.paddle.framework import import_paddle

paddle = import_paddle()
from paddle import nn  # noqa: E402


def known_session(graph, threads: int | None = None):
    """A LayerSession computing a KnownGraph (matmul via ``paddle.matmul``, conv via ``nn.Conv1D`` without bias)."""
    from speechperf.backend import CapabilityUnavailableError, TensorInfo
    from speechperf.backends.paddle.session import LayerSession

    if graph.dtype != "float32":
        raise CapabilityUnavailableError(
            f"backend 'paddle': no {graph.dtype} GEMM kernel outside a quantized inference program"
        )

    if threads is not None:
        paddle.base.core.set_num_threads(threads)
    weight = paddle.to_tensor(graph.weight())
    layer: nn.Layer
    if graph.kind == "matmul":
        layer = _MatMul(weight)
    else:
        layer = nn.Conv1D(graph.c_in, graph.c_out, graph.kernel, bias_attr=False)
        layer.weight.set_value(weight)
    layer.eval()
    return LayerSession(layer, (TensorInfo("x", "float32"),), (TensorInfo("y"),), "cpu")


class _MatMul(nn.Layer):
    def __init__(self, weight):
        super().__init__()
        self.weight = self.create_parameter(weight.shape, dtype="float32")
        self.weight.set_value(weight)

    def forward(self, x):
        return paddle.matmul(x, self.weight)
