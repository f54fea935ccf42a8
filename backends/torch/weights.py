"""Write a torch module's weights as ``.safetensors`` under their torch names, for another framework to load.

This is how one set of weights reaches the paddle port of a model: paddle's ``load_weights`` reads the torch names
and layout and transposes what differs.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file

from speechperf.backend import ModelSpec
from speechperf.backends.torch.session import load_torchscript
from speechperf.errors import ModelFileError


def save_state_dict(module: torch.nn.Module, path: Path) -> Path:
    """Save ``module.state_dict()`` (parameters and persistent buffers) to ``path`` as ``.safetensors``."""
    path = _check_output(path)
    # safetensors refuses tensors that share memory or are not contiguous; a detached contiguous copy is neither.
    state = {name: value.detach().cpu().contiguous().clone() for name, value in module.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path))
    return path


def export_weights(spec: ModelSpec, out: Path) -> Path:
    """The weights of the TorchScript file ``spec.path`` (its ``spec.entry`` submodule) written to ``out``.

    ``torch.jit.load`` runs the file's code, so only trusted files (such as one shipped in an installed wheel)
    belong here.
    """
    out = _check_output(out)  # before the load, which takes a while
    module = load_torchscript(spec, "cpu").module
    assert isinstance(module, torch.nn.Module)  # a TorchScript file loads as a ScriptModule
    return save_state_dict(module, out)


def _check_output(path: Path) -> Path:
    path = Path(path)
    if path.suffix != ".safetensors":
        raise ModelFileError(f"weights output {path} has suffix {path.suffix!r}; allowed: .safetensors")
    return path
