"""A user's own speech-enhancement-shaped models as users have them, built here (tiny, seeded): a GRU mask network
(features [1, T, BINS] in, a sigmoid gain mask of the same shape out) and a conv mask network (same interface),
each as TorchScript, as ONNX exported from torch (opset 11 by default, as third-party files often are) and as a
paddle inference program with the torch weights copied in."""

from __future__ import annotations

from pathlib import Path

BINS = 16
HIDDEN = 24


def torch_model(kind: str):
    import torch
    from torch import nn

    class GruMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(BINS, HIDDEN, batch_first=True)
            self.out = nn.Linear(HIDDEN, BINS)

        def forward(self, feats):
            hidden, _ = self.gru(feats)
            return torch.sigmoid(self.out(hidden))

    class ConvMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(BINS, HIDDEN, 3, padding=1)
            self.conv2 = nn.Conv1d(HIDDEN, BINS, 3, padding=1)

        def forward(self, feats):
            x = torch.relu(self.conv1(feats.transpose(1, 2)))
            return torch.sigmoid(self.conv2(x)).transpose(1, 2)

    torch.manual_seed(0)
    return {"gru": GruMask, "conv": ConvMask}[kind]().eval()


def save_torchscript(kind: str, path: Path) -> Path:
    import torch

    torch.jit.script(torch_model(kind)).save(str(path))
    return path


def save_onnx(kind: str, path: Path, opset: int = 11) -> Path:
    import torch

    with torch.no_grad():
        torch.onnx.export(
            torch_model(kind),
            (torch.randn(1, 7, BINS),),
            str(path),
            input_names=["feats"],
            output_names=["mask"],
            dynamic_axes={"feats": {1: "frames"}, "mask": {1: "frames"}},
            opset_version=opset,
            dynamo=False,
        )
    return path


def save_paddle(kind: str, prefix: Path) -> Path:
    """The same network in paddle, the torch weights copied in (paddle's Linear keeps [in, out])."""
    import numpy as np
    import paddle

    state = {k: v.detach().numpy() for k, v in torch_model(kind).state_dict().items()}

    class GruMask(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.gru = paddle.nn.GRU(BINS, HIDDEN)
            self.out = paddle.nn.Linear(HIDDEN, BINS)

        def forward(self, feats):
            hidden, _ = self.gru(feats)
            return paddle.nn.functional.sigmoid(self.out(hidden))

    class ConvMask(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = paddle.nn.Conv1D(BINS, HIDDEN, 3, padding=1)
            self.conv2 = paddle.nn.Conv1D(HIDDEN, BINS, 3, padding=1)

        def forward(self, feats):
            x = paddle.nn.functional.relu(self.conv1(feats.transpose([0, 2, 1])))
            return paddle.nn.functional.sigmoid(self.conv2(x)).transpose([0, 2, 1])

    layer = {"gru": GruMask, "conv": ConvMask}[kind]()
    names = {
        "gru.weight_ih_l0": "gru.0.cell.weight_ih",
        "gru.weight_hh_l0": "gru.0.cell.weight_hh",
        "gru.bias_ih_l0": "gru.0.cell.bias_ih",
        "gru.bias_hh_l0": "gru.0.cell.bias_hh",
    }
    own = layer.state_dict()
    for name, value in state.items():
        target = names.get(name, name)
        if name == "out.weight":
            value = value.T
        assert target in own, (target, sorted(own))
        own[target].set_value(np.ascontiguousarray(value))
    layer.eval()
    spec = [paddle.static.InputSpec([1, None, BINS], "float32", "feats")]
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), str(prefix))
    return prefix.with_suffix(".json")
