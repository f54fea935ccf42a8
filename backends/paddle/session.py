"""Sessions over paddle inference models (predictor or ``paddle.jit.load``) and ``nn.Layer`` factories."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import ModelSpec, Session, TensorInfo, check_output_count
from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.weights import load_weights
from speechperf.errors import ModelFileError, SpeechperfError, decisive_line, first_line

paddle = import_paddle()
from paddle import inference, nn  # noqa: E402

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

    def __init__(self, predictor, spec: ModelSpec, model: Path, device: str):
        self.predictor = predictor
        self.device = device
        names = predictor.get_input_names()
        declared = _declared_inputs(spec, model)
        self.inputs = tuple(declared.get(n) or TensorInfo(n, _dtype(predictor.get_input_handle(n))) for n in names)
        self._fetch = predictor.get_output_names()
        self.outputs = tuple(TensorInfo(n) for n in spec.output_names(self._fetch))
        check_output_count(self.outputs, len(self._fetch), spec.path)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        for info in self.inputs:
            handle = self.predictor.get_input_handle(info.name)
            value = np.ascontiguousarray(feeds[info.name])
            handle.reshape(value.shape)
            handle.copy_from_cpu(value)
        self.predictor.run()
        return self.named_outputs([self.predictor.get_output_handle(fetch).copy_to_cpu() for fetch in self._fetch])

    def parameter_bytes(self, feeds=None) -> int | None:
        # The predictor lists no parameters; the .pdiparams file is the tensors' bytes plus a few dozen bytes of
        # header each, close enough for a lower bound on traffic.
        if self.spec is None or self.spec.path is None:
            return None
        params = Path(self.spec.weights or Path(self.spec.path).with_suffix(".pdiparams"))
        return params.stat().st_size if params.is_file() else None


def _declared_inputs(spec: ModelSpec, model: Path) -> dict[str, TensorInfo]:
    """The inputs a spec names, with the shapes (and dtypes) the program ``model`` (the spec's file) declares where
    the spec gives none, so a feed of the wrong layout is refused by name, at load by a stage and on each call by
    the session."""
    program = pir_input_infos(model)
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
        return {name: value.numpy() for name, value in self.named_outputs(result).items()}

    def parameter_bytes(self, feeds=None) -> int | None:
        # Reference-model components share one parent layer, so the layer's parameters are the whole model's: count
        # those of the sublayers a call runs (a lower bound: a weight read without calling its layer is missed).
        if feeds is None or not hasattr(self.layer, "sublayers"):
            return None
        ran: dict[int, nn.Layer] = {}

        def seen(layer, _inputs) -> None:  # a pre-hook that returns something replaces the inputs
            ran[id(layer)] = layer

        hooks = [sub.register_forward_pre_hook(seen) for sub in [self.layer, *self.layer.sublayers()]]
        try:
            self.run(feeds)
        finally:
            for hook in hooks:
                hook.remove()
        tensors = {}
        for layer in ran.values():
            for tensor in [*layer.parameters(include_sublayers=False), *layer.buffers(include_sublayers=False)]:
                tensors[id(tensor)] = int(np.prod(tensor.shape)) * tensor.element_size()
        return sum(tensors.values()) or None


def check_program(model: Path) -> None:
    """Refuse a legacy ``.pdmodel`` that is not a paddle program before paddle parses it: its C++ parser crashes the
    whole process on some garbage (SIGSEGV on 3 kB of random bytes, paddlepaddle 3.3.1), where the same
    ``ProgramDesc`` protobuf parsed in Python raises. A PIR ``.json`` program is left to paddle, whose JSON parser
    raises a clear error on anything that is not one."""
    if model.suffix == ".json":
        return
    with warnings.catch_warnings():  # the generated module warns about its protobuf runtime's version
        warnings.simplefilter("ignore")
        from paddle.base.proto import framework_pb2

    program = framework_pb2.ProgramDesc()  # type: ignore[attr-defined]  # protobuf makes its classes at import
    try:
        program.ParseFromString(model.read_bytes())
    except Exception as exc:  # google.protobuf.message.DecodeError; the module is paddle's dependency, not ours
        raise ModelFileError(
            f"cannot load {model} as a paddle inference model: it is not a paddle program (a ProgramDesc "
            f"protobuf): {first_line(exc)}"
        ) from None
    if not program.blocks or not program.blocks[0].ops:
        raise ModelFileError(f"cannot load {model} as a paddle inference model: it holds no operators")


def load_inference(spec: ModelSpec, device: str, threads: int | None) -> Session:
    model = spec.existing(spec.path)
    params = _params_path(spec, model)
    check_program(model)
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
    predictor_switches(config, spec.options, device)
    # Config.enable_memory_optim() breaks predictor creation on PIR models; it is left off on purpose.
    try:
        predictor = inference.create_predictor(config)
    except Exception as exc:
        raise ModelFileError(f"cannot load {model} as a paddle inference model: {decisive_line(exc)}") from None
    return PredictorSession(predictor, spec, model, device)


def predictor_switches(config, options: Mapping, device: str) -> None:
    """oneDNN and the IR passes, each set explicitly both ways: a fresh Config's defaults are not what the docs of
    every paddle version say (3.3.1's ``mkldnn_enabled()`` is already True), so a variant states what it runs."""
    config.switch_ir_optim(bool(options.get("ir_optim", True)))
    if device != "cpu":
        return
    if options.get("mkldnn", True) or options.get("mkldnn_int8"):
        config.enable_mkldnn()
    else:
        config.disable_mkldnn()
    if options.get("mkldnn_int8"):
        # A quantized program (speechperf optimize, paddle-ptq): oneDNN runs its int8 kernels.
        config.enable_mkldnn_int8()


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
        inputs = tuple(_declared_inputs(spec, model).values())
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
    if spec.options.get("layer_api", "eager") == "predictor":
        program = exported_program(spec, layer, inputs)
        return load_inference(attrs.evolve(spec, path=program, format="inference", weights=None), device, threads)
    return LayerSession(layer, inputs, outputs, device)


def exported_program(spec: ModelSpec, layer, inputs: tuple[TensorInfo, ...]) -> Path:
    """The layer saved as an inference program (``paddle.jit.to_static`` + ``jit.save``) in the speechperf cache,
    once per factory, factory arguments, weights content and paddle version; the ``.json`` path."""
    import hashlib
    import json

    from speechperf.cache import cache_dir
    from speechperf.outputs import atomic_folder, file_sha256

    declared = static_inputs(inputs, f"option layer_api='predictor': {spec.factory}")
    identity = {
        "factory": spec.factory,
        "kwargs": {k: str(v) for k, v in sorted(spec.factory_kwargs.items())},
        "weights": None if spec.weights is None else file_sha256(spec.weights),
        "inputs": declared,
        "paddle": paddle.__version__,
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir() / "paddle_predictor" / key
    program = folder / "model.json"
    if program.exists():
        return program
    specs = [input_spec(*one) for one in declared]
    with atomic_folder(folder, "paddle predictor export") as work:
        try:
            static = paddle.jit.to_static(layer, input_spec=specs, full_graph=True)
            paddle.jit.save(static, str(work / "model"))
        except Exception as exc:
            raise ModelFileError(
                f"option layer_api='predictor': cannot export {spec.factory} to an inference program: "
                f"{decisive_line(exc)}"
            ) from None
    return program


def static_inputs(inputs: Iterable[TensorInfo], what: str) -> list[tuple[str, str, list[int | None]]]:
    """(name, dtype, shape with each dynamic axis None) of every input, as ``paddle.jit.to_static`` takes them; a
    one-line error naming ``what`` when an input does not declare its dtype and shape."""
    inputs = tuple(inputs)
    static = [
        (t.name, t.dtype, [d if isinstance(d, int) else None for d in t.shape])
        for t in inputs
        if t.dtype is not None and t.shape is not None
    ]
    if len(static) < len(inputs):
        raise ModelFileError(f"{what} must declare every input's dtype and shape to be exported")
    return static


def input_spec(name: str, dtype: str, shape: list[int | None]):
    """``paddle.static.InputSpec`` of one input, ``dtype`` a numpy dtype name (``"float32"``)."""
    from paddle.static import InputSpec

    # paddle takes any numpy dtype name; its annotation is a Literal of them, which a str read from a file is not.
    return InputSpec(shape, dtype, name)  # type: ignore[arg-type]


LOADERS = {"inference": load_inference, "layer": load_layer}
