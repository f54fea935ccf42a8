"""Analytic FLOPs of an ONNX Runtime session: the shared ONNX graph counter (``speechperf.meters.onnx_flops``),
with onnxruntime as its runner where shapes or If conditions are known only at run time (faster than the
reference evaluator it uses by default; the counts are the same, since the runner only supplies shapes)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from speechperf.meters.flops import FlopCount
from speechperf.meters.onnx_flops import count_onnx_flops, onnx_weight_bytes


def count_flops(session, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    """FlopCount of one call of an OnnxRuntimeSession (or a path / ModelProto) on ``feeds``."""
    return count_onnx_flops(session, feeds, runner=ort_runner, model_of=_model_of)


def weight_bytes(session, feeds: Mapping[str, np.ndarray]) -> int:
    """Bytes of the weights one call of ``session`` on ``feeds`` reads (the roofline's traffic bound)."""
    return onnx_weight_bytes(session, feeds, runner=ort_runner, model_of=_model_of)


def ort_runner(model):
    """Run ``model`` with onnxruntime, optimisations off, on the CPU: ``feeds -> {output: array}``."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, dict(feeds))))


def _model_of(session):
    """The ModelProto behind an OnnxRuntimeSession that ``BackendBase.load`` did not make (no ``spec``): the file
    ORT read, the spec ``load_onnx`` was given, or the bytes of one made in memory (``known.py``'s graphs)."""
    import onnx

    if getattr(getattr(session, "spec", None), "path", None) is not None:
        return None  # the shared counter reads session.spec.path
    inner = getattr(session, "session", None)
    loaded_with = getattr(session, "loaded_with", None)  # (spec, threads, providers) from load_onnx
    path = getattr(inner, "_model_path", None) or (loaded_with[0].path if loaded_with else None)
    if path:
        return onnx.load(str(path))
    data = getattr(inner, "_model_bytes", None)
    return onnx.load_from_string(data) if data else None
