"""Sessions over paddle inference models (predictor or ``paddle.jit.load``) and ``nn.Layer`` factories."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from speechperf.backend import ModelSpec, Session, TensorInfo
from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.weights import load_weights
from speechperf.errors import ModelFileError, SpeechperfError, decisive_line

paddle = import_paddle()
from paddle import inference  # noqa: E402

_PADDLE_TO_NUMPY = {
    "FLOAT32": "float32",
    "FLOAT64": "float64",
    "FLOAT16": "float16",
    "INT64": "int64",
    "INT32": "int32",
    "INT8": "int8",
    "UINT8": "uint8",
    "BOOL": "bool",
}


def _params_path(spec: ModelSpec, model: Path) -> Path:
    return spec.existing(spec.weights or model.with_suffix(".pdiparams"), "parameters file (.pdiparams)")


class PredictorSession(Session):
    """A ``paddle.inference`` predictor: the deployment path, with its graph passes."""

    backend = "paddle"

    def __init__(self, predictor, spec: ModelSpec, device: str):
        self.predictor = predictor
        self.device = device
        names = predictor.get_input_names()
        declared = _declared_inputs(spec)
        self.inputs = tuple(declared.get(n) or TensorInfo(n, _dtype(predictor.get_input_handle(n))) for n in names)
        self._fetch = predictor.get_output_names()
        self.outputs = tuple(TensorInfo(n) for n in spec.output_names(self._fetch))

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        for info in self.inputs:
            handle = self.predictor.get_input_handle(info.name)
            value = np.ascontiguousarray(feeds[info.name])
            handle.reshape(value.shape)
            handle.copy_from_cpu(value)
        self.predictor.run()
        return {
            out.name: self.predictor.get_output_handle(fetch).copy_to_cpu()
            for out, fetch in zip(self.outputs, self._fetch)
        }


def _declared_inputs(spec: ModelSpec) -> dict[str, TensorInfo]:
    """The inputs a spec names, with the shapes (and dtypes) the program declares where the spec gives none, so
    a feed of the wrong layout is refused by name, at load by a stage and on each call by the session."""
    program = pir_input_infos(spec.path)
    if not spec.inputs:
        return program
    declared = {}
    for t in spec.inputs:
        known = program.get(t.name)
        if known is not None:
            t = TensorInfo(t.name, t.dtype or known.dtype, t.shape if t.shape is not None else known.shape)
        declared[t.name] = t
    return declared


def pir_input_infos(model: Path) -> dict[str, TensorInfo]:
    """Names, dtypes and shapes of the feeds of a PIR ``.json`` program, read from its ``data`` ops.

    The predictor API gives names and dtypes but not ranks; without ranks a wrong feed fails deep inside a
    kernel instead of with a message naming the input. Best effort: an unreadable layout gives no infos.
    """
    import json

    if model.suffix != ".json":
        return {}
    try:
        program = json.loads(model.read_text())
        ops = program["program"]["regions"][0]["blocks"][0]["ops"]
        infos = {}
        for op in ops:
            if op.get("#") != "1.data":
                continue
            attrs = {a["N"]: a["AT"]["D"] for a in op["A"]}
            shape = tuple(None if d < 0 else d for d in attrs["shape"])
            infos[attrs["name"]] = TensorInfo(attrs["name"], attrs["dtype"], shape)
        return infos
    except (ValueError, KeyError, IndexError, TypeError):
        return {}


def _dtype(handle) -> str | None:
    return _PADDLE_TO_NUMPY.get(str(handle.type()).rsplit(".", 1)[-1])


class LayerSession(Session):
    """An eager ``nn.Layer``, or a layer loaded by ``paddle.jit.load``."""

    backend = "paddle"

    def __init__(self, layer, inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...], device: str):
        self.layer = layer
        self.inputs = inputs
        self.outputs = outputs
        self.device = device

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        args = [paddle.to_tensor(np.ascontiguousarray(feeds[t.name])) for t in self.inputs]
        with paddle.no_grad():
            result = self.layer(*args)
        if isinstance(result, paddle.Tensor):
            result = (result,)
        elif isinstance(result, Mapping):
            result = tuple(result.values())
        return {t.name: value.numpy() for t, value in zip(self.outputs, result)}


def load_inference(spec: ModelSpec, device: str, threads: int | None) -> Session:
    model = spec.existing(spec.path)
    params = _params_path(spec, model)
    if spec.options.get("api", "predictor") == "jit":
        return _load_jit(spec, model, device, threads)
    config = inference.Config(str(model), str(params))
    config.disable_glog_info()
    if device == "cuda":
        config.enable_use_gpu(256, 0)
    else:
        config.disable_gpu()
    if threads is not None:
        config.set_cpu_math_library_num_threads(threads)
    if spec.options.get("mkldnn_int8") and device == "cpu":
        # A quantized program (speechperf optimize, paddle-ptq): oneDNN runs its int8 kernels.
        config.enable_mkldnn()
        config.enable_mkldnn_int8()
    # Config.enable_memory_optim() breaks predictor creation on PIR models; it is left off on purpose.
    try:
        predictor = inference.create_predictor(config)
    except Exception as exc:
        raise ModelFileError(f"cannot load {model} as a paddle inference model: {decisive_line(exc)}") from None
    return PredictorSession(predictor, spec, device)


def _load_jit(spec: ModelSpec, model: Path, device: str, threads: int | None) -> Session:
    if device == "cpu" and threads is not None and threads > 1:
        # Measured on paddlepaddle 3.3.1: a paddle.jit.load layer keeps one core busy whatever set_num_threads,
        # OMP_NUM_THREADS or the executor flags say, so a multi-thread figure from it would be a one-thread one.
        raise SpeechperfError(
            f"threads={threads}: a model loaded with paddle.jit.load (api 'jit') runs on one CPU core in paddle "
            f"{paddle.__version__}; use threads=1, or the inference predictor (api 'predictor') for more threads"
        )
    paddle.set_device("gpu:0" if device == "cuda" else "cpu")
    try:
        layer = paddle.jit.load(str(model.with_suffix("")))
    except Exception as exc:
        raise ModelFileError(f"cannot load {model} with paddle.jit.load: {decisive_line(exc)}") from None
    layer.eval()
    if spec.inputs:
        inputs = tuple(_declared_inputs(spec).values())
    else:
        # The predictor reads the feed names the model was saved with; so does this path.
        probe = inference.create_predictor(_cpu_config(model, _params_path(spec, model)))
        declared = pir_input_infos(model)
        names = probe.get_input_names()
        inputs = tuple(declared.get(n) or TensorInfo(n, _dtype(probe.get_input_handle(n))) for n in names)
        fetch = probe.get_output_names()
        return LayerSession(layer, inputs, tuple(TensorInfo(n) for n in spec.output_names(fetch)), device)
    outputs = tuple(spec.outputs) if spec.outputs else (TensorInfo("output"),)
    return LayerSession(layer, inputs, outputs, device)


def _cpu_config(model: Path, params: Path):
    config = inference.Config(str(model), str(params))
    config.disable_glog_info()
    config.disable_gpu()
    config.switch_ir_optim(False)
    return config


def load_layer(spec: ModelSpec, device: str, threads: int | None) -> Session:
    """An ``nn.Layer`` from a ``module:callable`` factory, weights from ``.safetensors`` or ``.npz``."""
    paddle.set_device("gpu:0" if device == "cuda" else "cpu")
    layer = spec.build_from_factory()
    if spec.weights is not None:
        load_weights(layer, spec.existing(spec.weights, "weights file"))
    layer.eval()
    if spec.inputs:
        inputs = tuple(spec.inputs)
    else:
        import inspect

        inputs = tuple(TensorInfo(n) for n in inspect.signature(layer.forward).parameters)
    outputs = tuple(spec.outputs) if spec.outputs else (TensorInfo("output"),)
    return LayerSession(layer, inputs, outputs, device)


LOADERS = {"inference": load_inference, "layer": load_layer}
