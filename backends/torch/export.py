"""ONNX from a user's TorchScript file through torch's own exporter (``derive: onnx``, speechperf.benchmark.derive).

The TorchScript exporter (``dynamo=False``) takes a ScriptModule as it is; the time axis of each sourced input is
declared dynamic, so the file runs any length, which the parity gate checks on samples of different lengths.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from speechperf.backend import ModelSpec
from speechperf.backends.torch.zoo import ONNX_OPSET


def export_onnx(
    source: Path | ModelSpec, feeds: dict[str, np.ndarray], outputs: list[str], dynamic_axes: dict, out: Path
) -> Path:
    """``source``: a TorchScript file, or a factory's spec (a Transformers module of ``model: hf``), traced by the
    same exporter."""
    import torch

    if isinstance(source, ModelSpec):
        module = source.build_from_factory().eval()
    else:
        module = torch.jit.load(str(source), map_location="cpu").eval()
    args = tuple(torch.from_numpy(np.ascontiguousarray(v)) for v in feeds.values())
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter warns about every GRU's batch size
        torch.onnx.export(
            module,
            args,
            str(out),
            input_names=list(feeds),
            output_names=list(outputs),
            dynamic_axes=dynamic_axes,
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
    return out
