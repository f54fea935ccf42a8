"""ONNX from a user's paddle inference program through paddle2onnx (``derive: onnx``,
speechperf.benchmark.derive): the program's declared input shapes carry its dynamic axes, and the outputs get the
stage's declared names (paddle2onnx names them after paddle's internal variables)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speechperf.backends.paddle.zoo import ONNX_OPSET, _name_outputs, _stdout_to_stderr


def export_onnx(source: Path, feeds: dict[str, np.ndarray], outputs: list[str], dynamic_axes: dict, out: Path) -> Path:
    import paddle2onnx

    with _stdout_to_stderr():
        paddle2onnx.export(
            str(source), str(source.with_suffix(".pdiparams")), str(out), opset_version=ONNX_OPSET,
            enable_onnx_checker=True,
        )  # fmt: skip
    _name_outputs(out, list(outputs))
    return out
