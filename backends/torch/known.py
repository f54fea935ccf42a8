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
    if graph.dtype == "int8":  # torch's int8 GEMM kernel (int8 x int8 -> int32)
        return TorchSession(_IntMatMul(weight).eval(), (TensorInfo("x", "uint8"),), (TensorInfo("y"),), "cpu")
    module: torch.nn.Module
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


class _IntMatMul(torch.nn.Module):
    """uint8 x int8 -> int32 through torch's int8 x int8 kernel: ``x = (x - 128) + 128``, so ``x @ w`` is
    ``(x - 128) @ w`` plus ``128`` times each column sum of ``w`` (exact in int32)."""

    weight: torch.Tensor  # buffers, registered below (torch types an unknown attribute as Tensor | Module)
    offset: torch.Tensor

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer(
            "offset", 128 * weight.to(torch.int32).sum(0, dtype=torch.int32)
        )  # sum would widen to int64

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = (x.to(torch.int16) - 128).to(torch.int8)
        return torch._int_mm(shifted, self.weight) + self.offset
