"""Load framework-neutral weights (torch parameter names, numpy arrays) into a paddle ``nn.Layer``.

Reference models and ports keep the torch parameter names, so the only difference between the two state dicts is
layout: ``nn.Linear`` stores its weight as [in, out] in paddle and [out, in] in torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from speechperf.errors import ModelFileError


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """Arrays from ``.safetensors`` or ``.npz``; neither format can run code when read."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.numpy import load_file

            return load_file(str(path))
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
    except Exception as exc:
        raise ModelFileError(f"cannot read weights {path}: {exc}") from None
    raise ModelFileError(f"weights file {path} has suffix {path.suffix!r}; allowed: .safetensors, .npz")


def torch_layout_to_paddle(layer, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Transpose the weights of every ``nn.Linear`` in ``layer``; leave all other arrays as they are."""
    import paddle

    linear = {
        f"{prefix}.weight" if prefix else "weight"
        for prefix, sub in layer.named_sublayers(include_self=True)
        if isinstance(sub, paddle.nn.Linear)
    }
    return {k: (v.T.copy() if k in linear else v) for k, v in arrays.items()}


def load_weights(layer, path: Path) -> None:
    arrays = torch_layout_to_paddle(layer, read_arrays(path))
    expected = set(layer.state_dict())
    missing, unexpected = expected - set(arrays), set(arrays) - expected
    if missing or unexpected:
        raise ModelFileError(
            f"weights {path} do not fit {type(layer).__name__}: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}"
        )
    state = layer.state_dict()
    for name, value in arrays.items():
        if tuple(state[name].shape) != value.shape:
            raise ModelFileError(
                f"weights {path}: {name} has shape {value.shape}; {type(layer).__name__} expects "
                f"{tuple(state[name].shape)}"
            )
    layer.set_state_dict({k: v.astype(state[k].numpy().dtype, copy=False) for k, v in arrays.items()})
