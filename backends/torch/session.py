"""Sessions over TorchScript files, ``torch.export`` programs and ``nn.Module`` factories."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path

import numpy as np
import torch

from speechperf.backend import ModelSpec, Session, TensorInfo, check_output_count
from speechperf.errors import ModelFileError, decisive_line
from speechperf.logs import silenced

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

    def __init__(
        self,
        module: Callable,
        inputs: tuple[TensorInfo, ...],
        outputs: tuple[TensorInfo, ...],
        device: str,
        dtype: torch.dtype | None = None,
    ):
        self.module = module
        self.inputs = inputs
        self.outputs = outputs
        self.device = device
        self.dtype = dtype  # the autocast dtype of a module whose matmul layers hold their weights in it

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        args = [torch.from_numpy(np.ascontiguousarray(feeds[t.name])).to(self.device) for t in self.inputs]
        with (
            torch.inference_mode(),
            torch.autocast(
                device_type=self.device.split(":")[0],
                dtype=self.dtype or torch.bfloat16,
                enabled=self.dtype is not None,
            ),
        ):  # casts each matmul's inputs to the weights' dtype, and a norm's back to float32
            result = self.module(*args)
        if isinstance(result, torch.Tensor):
            result = (result,)
        elif isinstance(result, Mapping):
            result = tuple(result.values())
        return {name: _host(value) for name, value in self.named_outputs(result).items()}

    def parameter_bytes(self, feeds=None) -> int | None:
        tensors: dict[int, int] = {}
        graph = getattr(self.module, "graph", None)
        if isinstance(self.module, torch.nn.Module) and not isinstance(self.module, torch.jit.ScriptModule):
            if feeds is None:
                return None
            # Reference-model components share one parent module, so the module's parameters are the whole
            # model's: count those of the submodules a call runs (a lower bound: a weight read without calling its
            # module is missed).
            ran: dict[int, torch.nn.Module] = {}

            def seen(module, _args) -> None:  # a pre-hook that returns something replaces the arguments
                ran[id(module)] = module

            hooks = [sub.register_forward_pre_hook(seen) for sub in self.module.modules()]
            try:
                self.run(feeds)
            finally:
                for hook in hooks:
                    hook.remove()
            for module in ran.values():
                for tensor in [*module.parameters(recurse=False), *module.buffers(recurse=False)]:
                    tensors[tensor.data_ptr()] = tensor.numel() * tensor.element_size()
            return sum(tensors.values()) or None
        for method in ("parameters", "buffers"):  # TorchScript
            for tensor in getattr(self.module, method, lambda: ())():
                tensors[tensor.data_ptr()] = tensor.numel() * tensor.element_size()
        if not tensors and graph is not None:  # frozen TorchScript keeps its weights as graph constants
            for node in graph.findAllNodes("prim::Constant"):
                if node.output().type().kind() == "TensorType":
                    value = node.output().toIValue()
                    tensors[value.data_ptr()] = value.numel() * value.element_size()
        return sum(tensors.values()) or None


#: The layers whose weights a lower-precision run holds in that dtype: the matmuls and convolutions, which autocast
#: runs in it anyway (cast once here, not on every call); norms and embeddings stay float32, as autocast keeps them.
MATMUL_LAYERS = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d)


def _matmul_weights_to(module: torch.nn.Module, dtype: torch.dtype) -> None:
    for layer in module.modules():
        if isinstance(layer, MATMUL_LAYERS):
            layer.to(dtype)


def _host(value: torch.Tensor) -> np.ndarray:
    """A tensor as numpy; bfloat16 (which numpy cannot hold) widened to float32, exactly."""
    value = value.detach().cpu()
    return (value.float() if value.dtype == torch.bfloat16 else value).numpy()


def _resolve_entry(module: torch.nn.Module, entry: str | None, where: Path) -> torch.nn.Module:
    for attr in entry.split(".") if entry else []:
        if not hasattr(module, attr):
            raise ModelFileError(f"{where} has no submodule {entry!r} (no attribute {attr!r})")
        module = getattr(module, attr)
    return module


def _output_infos(spec: ModelSpec, count: int | None, where: Path) -> tuple[TensorInfo, ...]:
    """The declared outputs (checked against ``count``, what the file says it returns, where it says), or names
    made up for ``count`` outputs."""
    if spec.outputs:
        if count is not None:
            check_output_count(spec.outputs, count, where)
        return tuple(spec.outputs)
    count = 1 if count is None else count
    names = ["output"] if count == 1 else [f"output_{i}" for i in range(count)]
    return tuple(TensorInfo(n) for n in names)


def compiled(module: torch.nn.Module, options: Mapping) -> Callable:
    """``module`` through ``torch.compile`` (Inductor) when the ``compile`` option asks for it, else itself.

    torch.compile is lazy: the graphs are compiled on the first call, which the bench's warm-up makes, so the
    compile time is part of the cold start (the stage's first call) and never of the timed repeats. Inductor keeps
    its compiled kernels in the speechperf cache, so a later process finds them (docs/benchmark.md).
    """
    mode = options.get("compile", "off")
    if mode == "off":
        return module
    from speechperf.cache import cache_dir

    folder = inductor_cache_dir(os.environ, cache_dir() / "torchinductor")
    folder.mkdir(parents=True, exist_ok=True)  # Inductor expects it there
    drop_truncated_kernels(folder)
    if mode == "aot-inductor":
        return AotInductorModule(module)
    dynamic = bool(options.get("compile_dynamic", True))
    result = torch.compile(module, mode=None if mode == "default" else mode, dynamic=dynamic)
    return FrozenCompile(result) if options.get("compile_freezing") else result


_INDUCTOR_ENV = "TORCHINDUCTOR_CACHE_DIR"
# Read once, when the backend is imported: Inductor writes its own default into the environment on first use,
# so a later look cannot tell the user's folder from Inductor's.
_USER_INDUCTOR_DIR = os.environ.get(_INDUCTOR_ENV)


def inductor_cache_dir(environ: MutableMapping[str, str], ours: Path, user: str | None = None) -> Path:
    """Inductor's cache folder: the user's ``TORCHINDUCTOR_CACHE_DIR`` when they set one before the process
    started, else ``ours``, set again on each call (the speechperf cache folder may have changed since the last
    compile in this process, and an earlier use of Inductor may have written its own default there)."""
    user = _USER_INDUCTOR_DIR if user is None else user
    environ[_INDUCTOR_ENV] = user or str(ours)
    return Path(environ[_INDUCTOR_ENV])


def drop_truncated_kernels(folder: Path) -> list[Path]:
    """Remove the empty kernel libraries (``*.so`` of 0 bytes) from Inductor's cache: a process killed while it
    compiled (``compare --best`` kills a child at its budget) leaves one, and every later process that compiles the
    same kernel then fails with "ImportError: ... file too short" instead of compiling it again (torch 2.13)."""
    dropped = [p for p in folder.rglob("*.so") if p.is_file() and p.stat().st_size == 0] if folder.is_dir() else []
    for path in dropped:
        path.unlink(missing_ok=True)
    return dropped


class FrozenCompile:
    """A ``torch.compile``d module called with Inductor's ``freezing`` on: Inductor reads its config when it
    compiles, on the first call (and on a recompile), so each call patches it rather than the whole process."""

    def __init__(self, compiled: Callable):
        self.compiled = compiled

    def __call__(self, *args):
        import torch._inductor.config as inductor_config

        with inductor_config.patch(freezing=True):
            return self.compiled(*args)

    def __getattr__(self, name: str):
        return getattr(self.compiled, name)


class AotInductorModule:
    """``module`` exported with ``torch.export`` and compiled by AOTInductor on its first call, with that call's
    inputs as the example and every axis dynamic (size-1 axes too: a decoder's first step has a prefix of one
    token). The first call is the bench's warm-up, so the compile is cold start. The package is kept in
    ``<speechperf cache>/torch_aoti/<key>/model.pt2``, the key hashing the module's class, its weights, torch's
    version and the inputs' dtypes and ranks, so a later process loads it without compiling."""

    def __init__(self, module: torch.nn.Module):
        self.module = module
        self.runner: Callable | None = None

    def __call__(self, *args):
        if self.runner is None:
            self.runner = self._compiled(args)
        return self.runner(*args)

    def _key(self, args) -> str:
        import hashlib

        digest = hashlib.sha256(f"{type(self.module).__qualname__} {torch.__version__}".encode())
        for a in args:
            digest.update(f"{a.dtype} {a.dim()};".encode())
        for name, tensor in sorted(getattr(self.module, "state_dict", dict)().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
        return digest.hexdigest()[:16]

    def _compiled(self, args) -> Callable:
        import torch.fx.experimental._config as fx_config

        from speechperf.cache import cache_dir
        from speechperf.outputs import atomic_folder

        package = cache_dir() / "torch_aoti" / self._key(args) / "model.pt2"
        if not package.exists():
            dims = tuple({i: torch.export.Dim.AUTO for i in range(a.dim())} for a in args)
            try:
                # torch's config modules get patch() when they are imported (install_config_module), unseen by mypy.
                patch = fx_config.patch  # type: ignore[attr-defined]
                with patch(backed_size_oblivious=True), atomic_folder(package.parent, "AOTInductor") as work:
                    program = torch.export.export(self.module, tuple(args), dynamic_shapes=dims)
                    torch._inductor.aoti_compile_and_package(program, package_path=str(work / "model.pt2"))
            except Exception as exc:
                raise ModelFileError(f"torch.export + AOTInductor failed: {decisive_line(exc)}") from None
        return torch._inductor.aoti_load_package(str(package))


def load_torchscript(spec: ModelSpec, device: str) -> TorchSession:
    path = spec.existing(spec.path)
    try:
        root = torch.jit.load(str(path), map_location=device)
    except Exception as exc:
        raise ModelFileError(f"cannot load {path} as TorchScript: {decisive_line(exc)}") from None
    module = _resolve_entry(root, spec.entry, path).eval()
    schema = module.forward.schema  # type: ignore[attr-defined]  # a ScriptMethod; torch types forward as a callable
    if spec.options.get("compile", "off") != "off":
        raise ModelFileError(
            f"{path}: option compile={spec.options['compile']!r} applies to the module and export formats "
            "(torch-eager, torch-export), not to TorchScript; use optimize_for_inference for a TorchScript file"
        )
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
    if isinstance(returned, torch.TupleType):
        count: int | None = len(returned.elements())
    else:  # a tensor is one output; a dict or a list says its count only when called
        count = 1 if isinstance(returned, torch.TensorType) else None
    return TorchSession(module, inputs, _output_infos(spec, count, path), device)


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
        with silenced("torch.export"):  # it logs the traceback of an unreadable archive before raising
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
    module = compiled(program.module().to(device), spec.options)
    return TorchSession(
        module, tuple(inputs), _output_infos(spec, len(program.graph_signature.user_outputs), path), device
    )


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
    dtype = None if spec.options.get("dtype", "float32") == "float32" else getattr(torch, spec.options["dtype"])
    if dtype is not None:
        _matmul_weights_to(module, dtype)
    if spec.inputs:
        inputs = tuple(spec.inputs)
    else:
        # The module's own forward: a torch.compile'd module's is (*args, **kwargs) and an AOTInductor one has none.
        params = inspect.signature(module.forward).parameters
        inputs = tuple(TensorInfo(n) for n in params)
    outputs = tuple(spec.outputs) if spec.outputs else (TensorInfo("output"),)
    return TorchSession(compiled(module, spec.options), inputs, outputs, device, dtype)


LOADERS = {"torchscript": load_torchscript, "export": load_export, "module": load_module}
