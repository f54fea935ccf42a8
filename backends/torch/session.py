"""Sessions over TorchScript files, ``torch.export`` programs and ``nn.Module`` factories."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import torch

from speechperf.backend import ModelSpec, Session, TensorInfo
from speechperf.errors import ModelFileError, decisive_line

_TORCH_TO_NUMPY = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}


class TorchSession(Session):
    backend = "torch"

    def __init__(self, module: Callable, inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...], device: str):
        self.module = module
        self.inputs = inputs
        self.outputs = outputs
        self.device = device

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        args = [torch.from_numpy(np.ascontiguousarray(feeds[t.name])).to(self.device) for t in self.inputs]
        with torch.inference_mode():
            result = self.module(*args)
        if isinstance(result, torch.Tensor):
            result = (result,)
        elif isinstance(result, Mapping):
            result = tuple(result.values())
        return {t.name: value.detach().cpu().numpy() for t, value in zip(self.outputs, result)}


def _resolve_entry(module: torch.nn.Module, entry: str | None, where: Path) -> torch.nn.Module:
    for attr in entry.split(".") if entry else []:
        if not hasattr(module, attr):
            raise ModelFileError(f"{where} has no submodule {entry!r} (no attribute {attr!r})")
        module = getattr(module, attr)
    return module


def _output_infos(spec: ModelSpec, count: int) -> tuple[TensorInfo, ...]:
    if spec.outputs:
        return tuple(spec.outputs)
    names = ["output"] if count == 1 else [f"output_{i}" for i in range(count)]
    return tuple(TensorInfo(n) for n in names)


def load_torchscript(spec: ModelSpec, device: str) -> TorchSession:
    path = spec.existing(spec.path)
    try:
        root = torch.jit.load(str(path), map_location=device)
    except Exception as exc:
        raise ModelFileError(f"cannot load {path} as TorchScript: {decisive_line(exc)}") from None
    module = _resolve_entry(root, spec.entry, path).eval()
    schema = module.forward.schema
    if spec.options.get("optimize_for_inference"):
        try:
            with warnings.catch_warnings():  # both are marked deprecated in favour of torch.compile, and still work
                warnings.simplefilter("ignore", DeprecationWarning)
                module = torch.jit.optimize_for_inference(torch.jit.freeze(module))
        except Exception as exc:
            raise ModelFileError(f"cannot apply optimize_for_inference to {path}: {decisive_line(exc)}") from None
    if spec.inputs:
        inputs = tuple(spec.inputs)
    else:
        inputs = tuple(TensorInfo(a.name) for a in schema.arguments[1:])  # arguments[0] is self
    returned = schema.returns[0].type
    count = len(returned.elements()) if isinstance(returned, torch.TupleType) else 1
    return TorchSession(module, inputs, _output_infos(spec, count), device)


def pickled_tensors(path: Path) -> list[str]:
    """Names of the weights and constants a ``.pt2`` archive stores pickled (tensor subclasses):
    ``torch.export.load`` reads those with ``torch.load(weights_only=False)``, which runs code from the file."""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            configs = [
                n
                for n in archive.namelist()
                if n.endswith(("model_weights_config.json", "model_constants_config.json"))
            ]
            found = []
            for name in configs:
                entries = json.loads(archive.read(name)).get("config", {})
                found += [k for k, v in entries.items() if isinstance(v, dict) and v.get("use_pickle")]
            return found
    except (zipfile.BadZipFile, ValueError):
        return []  # not a readable archive: torch.export.load says why below


#: Operator namespaces a program may use that are registered only when a module is imported, and that module.
#: Quantized programs need them: torchao's int8 ops, and the quantize/dequantize ops of PT2E graphs.
OP_LIBRARIES = {"torchao": "torchao", "quantized_decomposed": "torch.ao.quantization.fx._decomposed"}


def register_op_libraries(path: Path) -> None:
    """Import the libraries whose operators the ``.pt2`` program at ``path`` calls, so that it deserializes."""
    import importlib
    import re
    import warnings
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            text = "".join(
                archive.read(n).decode("utf-8", "replace")
                for n in archive.namelist()
                if n.endswith("models/model.json")
            )
    except zipfile.BadZipFile:
        return
    for namespace in set(re.findall(r"torch\.ops\.([A-Za-z_]+)\.", text)) & set(OP_LIBRARIES):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                importlib.import_module(OP_LIBRARIES[namespace])
            except ImportError as exc:
                raise ModelFileError(
                    f"{path} calls torch.ops.{namespace} operators, which need "
                    f"{OP_LIBRARIES[namespace].split('.')[0]} installed ({exc})"
                ) from None


def load_export(spec: ModelSpec, device: str) -> TorchSession:
    path = spec.existing(spec.path)
    register_op_libraries(path)
    pickled = pickled_tensors(path)
    if pickled:
        raise ModelFileError(
            f"{path} stores {len(pickled)} tensor(s) pickled (e.g. {pickled[0]!r}, a tensor subclass); loading them "
            "would run code from the file, which speechperf never does: export plain tensors (torchao: "
            "torchao.utils.unwrap_tensor_subclass before torch.export)"
        )
    try:
        program = torch.export.load(str(path))
    except Exception as exc:
        raise ModelFileError(f"cannot load {path} as a torch.export program (.pt2): {decisive_line(exc)}") from None
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    inputs = []
    for name in program.graph_signature.user_inputs:
        val = placeholders[name].meta.get("val")
        dtype = _TORCH_TO_NUMPY.get(val.dtype) if val is not None else None
        shape = None if val is None else tuple(d if isinstance(d, int) else str(d) for d in val.shape)
        inputs.append(TensorInfo(name, dtype, shape))
    if spec.inputs:
        inputs = list(spec.inputs)
    module = program.module().to(device)
    return TorchSession(module, tuple(inputs), _output_infos(spec, len(program.graph_signature.user_outputs)), device)


def load_module(spec: ModelSpec, device: str) -> TorchSession:
    """An ``nn.Module`` from a ``module:callable`` factory, weights from ``.safetensors`` or a ``torch.save`` file.

    ``torch.save`` files are read with ``weights_only=True``, which refuses to run pickled code.
    """
    module = spec.build_from_factory()
    if spec.weights is not None:
        path = spec.existing(spec.weights, "weights file")
        try:
            if path.suffix == ".safetensors":
                from safetensors.torch import load_file

                state = load_file(str(path))
            else:
                state = torch.load(str(path), map_location="cpu", weights_only=True)
            module.load_state_dict(state)
        except Exception as exc:
            raise ModelFileError(f"cannot load weights {path} into {spec.factory}: {decisive_line(exc)}") from None
    module = module.to(device).eval()
    if spec.inputs:
        inputs = tuple(spec.inputs)
    else:
        params = inspect.signature(module.forward).parameters
        inputs = tuple(TensorInfo(n) for n in params)
    outputs = tuple(spec.outputs) if spec.outputs else (TensorInfo("output"),)
    return TorchSession(module, inputs, outputs, device)


LOADERS = {"torchscript": load_torchscript, "export": load_export, "module": load_module}
