"""The conformance suite's affine model, y = tanh(x @ weight + bias), as a torch module."""

import torch


class Affine(torch.nn.Module):
    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(n_in, n_out))
        self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def load_numpy(self, weight, bias) -> None:
        with torch.no_grad():
            self.weight.copy_(torch.from_numpy(weight))
            self.bias.copy_(torch.from_numpy(bias))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.weight + self.bias)
