"""A session over an ``.onnx`` file."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnxruntime as ort

from speechperf.backend import ModelSpec, Session, TensorInfo
from speechperf.errors import ModelFileError, SpeechperfError, decisive_line

OPTIMIZATION_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

_ORT_TO_NUMPY = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


class OnnxRuntimeSession(Session):
    backend = "onnxruntime"
    #: (spec, threads, providers), set by load_onnx only: the step profiler reloads such a session with profiling on
    #: and refuses one without it (declared, not defaulted, so ``hasattr`` tells them apart).
    loaded_with: tuple[ModelSpec, int | None, list[str]]

    def __init__(self, session: ort.InferenceSession, device: str):
        self.session = session
        self.device = device
        self.inputs = tuple(_info(a) for a in session.get_inputs())
        self.outputs = tuple(_info(a) for a in session.get_outputs())

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        names = self.output_names
        return dict(zip(names, self.session.run(names, dict(feeds))))

    def parameter_bytes(self, feeds=None) -> int | None:
        from speechperf.backends.onnxruntime.flops import weight_bytes

        if feeds is None:
            return None
        try:
            return weight_bytes(self, feeds)
        except SpeechperfError:  # a graph whose file is not known, or that cannot run on these feeds
            return None


def _info(arg) -> TensorInfo:
    shape = tuple(d if isinstance(d, int) else (d or None) for d in arg.shape)
    return TensorInfo(arg.name, _ORT_TO_NUMPY.get(arg.type), shape)


def session_options(spec: ModelSpec, threads: int | None) -> ort.SessionOptions:
    options = ort.SessionOptions()
    level = spec.options.get("graph_optimization_level", "all")
    if level not in OPTIMIZATION_LEVELS:
        raise SpeechperfError(
            f"graph_optimization_level {level!r} is not known; allowed: {', '.join(OPTIMIZATION_LEVELS)}"
        )
    options.graph_optimization_level = OPTIMIZATION_LEVELS[level]
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # ORT logs graph-optimizer notes (e.g. UnsqueezeElimination) as warnings on stderr at every load; errors stay.
    options.log_severity_level = int(spec.options.get("log_severity_level", 3))
    options.add_session_config_entry(
        "session.intra_op.allow_spinning", "1" if spec.options.get("intra_op_spinning", True) else "0"
    )
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    if spec.options.get("enable_profiling"):
        options.enable_profiling = True
        options.profile_file_prefix = str(spec.options.get("profile_file_prefix", "onnxruntime_profile"))
    return options


def load_onnx(spec: ModelSpec, device: str, threads: int | None, providers: list[str]) -> OnnxRuntimeSession:
    path = spec.existing(spec.path)
    try:
        session = ort.InferenceSession(str(path), session_options(spec, threads), providers=providers)
    except Exception as exc:
        raise ModelFileError(f"cannot load {path} as ONNX: {decisive_line(exc)}") from None
    result = OnnxRuntimeSession(session, device)
    result.loaded_with = (spec, threads, providers)  # the step profiler reloads it with profiling on
    return result
