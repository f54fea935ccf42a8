"""A session over a KnownGraph built with torch (``speechperf check`` validates FLOPs and thread pinning on it)."""

from __future__ import annotations

import torch


def known_session(graph, threads: int | None = None):
    """A TorchSession computing a KnownGraph (matmul via ``torch.matmul``, conv via ``nn.Conv1d`` without bias)."""
    from speechperf.backend import TensorInfo
    from speechperf.backends.torch.session import TorchSession

    if threads is not None:
        torch.set_num_threads(threads)
    weight = torch.from_numpy(graph.weight())
    if graph.kind == "matmul":
        module = _MatMul(weight)
    else:
        module = torch.nn.Conv1d(graph.c_in, graph.c_out, graph.kernel, bias=False)
        module.weight.data.copy_(weight)
    return TorchSession(module.eval(), (TensorInfo("x", "float32"),), (TensorInfo("y"),), "cpu")


class _MatMul(torch.nn.Module):
    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.weight)
