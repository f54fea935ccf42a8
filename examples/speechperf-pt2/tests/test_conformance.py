"""The conformance suite over the pt2 backend: the affine model exported with torch.export and saved as .pt2."""

from __future__ import annotations

from speechperf.backend import ModelSpec, TensorInfo
from speechperf.testing.conformance import BackendConformance


def write_affine_pt2(path, weight, bias):
    import torch
    from torch.export import Dim

    class Affine(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(*weight.shape)
            with torch.no_grad():
                self.linear.weight.copy_(torch.from_numpy(weight.T))
                self.linear.bias.copy_(torch.from_numpy(bias))

        def forward(self, x):
            return torch.tanh(self.linear(x))

    example = (torch.zeros(2, 7, weight.shape[0]),)
    program = torch.export.export(Affine().eval(), example, dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    torch.export.save(program, str(path))
    return path


class TestPt2(BackendConformance):
    backend_name = "pt2"

    def build_affine_model(self, directory, weight, bias):
        # a .pt2 program names its output after the node that makes it ("tanh"): the spec gives the model's name,
        # as the zoo's specs do for every format
        y = TensorInfo("y", "float32", ("batch", "time", weight.shape[1]))
        return ModelSpec(write_affine_pt2(directory / "affine.pt2", weight, bias), outputs=(y,))
