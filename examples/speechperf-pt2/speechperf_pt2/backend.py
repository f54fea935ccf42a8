"""The pt2 backend: ``torch.export`` programs, saved as ``.pt2`` files (``torch.export.save``) and run through
``ExportedProgram.module()``. A runtime that loads no ONNX: the zoo's models reach it as the factory spec of the
``torch-eager`` zoo format, which it exports on first use into its cache folder (docs/backends.md, "Runtimes that
load no ONNX").

torch is imported inside methods only: registering a backend must not import its framework.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from speechperf.backend import BackendBase, Capabilities, ModelFileError, ModelSpec, Session, TensorInfo, check_threads
from speechperf.cache import plugin_cache_dir

log = logging.getLogger(f"speechperf.{__name__}")


class Pt2Session(Session):
    """An exported program: host numpy arrays in, fresh host numpy arrays out, named as the program names them."""

    backend = "pt2"

    def __init__(self, program, device: str, inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...]):
        self.program = program  # torch.export.ExportedProgram
        self.module = program.module()  # the callable graph; the profiler interprets it node by node
        self.device = device
        self.inputs = inputs
        self.outputs = outputs

    def args(self, feeds: Mapping[str, np.ndarray]) -> list:
        import torch

        return [torch.from_numpy(np.ascontiguousarray(feeds[t.name])) for t in self.inputs]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.outputs_of(self.module, feeds)

    def outputs_of(self, call, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``call(*inputs)``'s outputs as fresh numpy arrays (``call``: the module, or the profiler's interpreter)."""
        import torch

        with torch.no_grad():
            out = call(*self.args(feeds))
        values = out if isinstance(out, (tuple, list)) else (out,)
        return {t.name: v.detach().numpy().copy() for t, v in zip(self.outputs, values)}


def _dtype(value) -> str | None:
    """A torch dtype as a numpy dtype name (``torch.float32`` -> ``"float32"``); None where numpy has none."""
    name = str(getattr(value, "dtype", "")).removeprefix("torch.")
    return (
        name if name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool") else None
    )


def _shape(value) -> tuple[int | str, ...] | None:
    """A FakeTensor's shape: an int for a fixed size, the symbol's name (``"s0"``) for a dynamic one."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    return tuple(int(d) if isinstance(d, int) else str(d) for d in shape)


def tensor_infos(program) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
    """The program's user inputs and outputs, named, typed and shaped as its graph declares them."""
    nodes = {node.name: node for node in program.graph.nodes}
    signature = program.graph_signature
    output_node = next(n for n in program.graph.nodes if n.op == "output")
    returned = output_node.args[0] if isinstance(output_node.args[0], (tuple, list)) else (output_node.args[0],)
    by_name = {getattr(n, "name", str(n)): n for n in returned}

    def info(name: str) -> TensorInfo:
        value = nodes[name].meta.get("val") if name in nodes else by_name[name].meta.get("val")
        return TensorInfo(name, _dtype(value), _shape(value))

    return tuple(info(n) for n in signature.user_inputs), tuple(info(n) for n in signature.user_outputs)


class Pt2Backend(BackendBase):
    name = "pt2"
    # torch.export has no __version__: BackendBase.framework_version reads the distribution's (torch's) instead
    framework_module = "torch.export"
    framework_package = "torch"
    install_command = 'pip install "speechperf[torch]"'
    capabilities = Capabilities(devices=("cpu",), formats=("pt2", "module"), profilers=("graph nodes",))
    suffix_formats = {".pt2": "pt2"}
    # the zoo's torch-eager format: ModelSpec(factory="speechperf.backends.torch.zoo:load_component", ...)
    factory_format = "module"

    def __init__(self):
        self._threads: int | None = None

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
        import torch

        if fmt == "module":
            path = self._exported(spec)
        else:
            path = spec.existing(spec.path)
        try:
            program = torch.export.load(str(path))
        except Exception as exc:  # a file torch.export cannot read: one line naming it
            raise ModelFileError(f"{path}: not a torch.export program ({type(exc).__name__})") from None
        inputs, outputs = tensor_infos(program)
        # the zoo declares its own names and axes (spec.inputs / outputs); a .pt2 file carries them
        return Pt2Session(program, device, spec.inputs or inputs, spec.outputs or outputs)

    def _exported(self, spec: ModelSpec) -> Path:
        """A factory spec exported once into the plugin's cache folder, keyed by the factory, its arguments and
        its weights' bytes; written atomically, as two runs may export the same model at once."""
        import torch

        kwargs = dict(spec.factory_kwargs)
        weights = spec.weights or kwargs.get("weights")
        digest = hashlib.sha256(f"{spec.factory}{sorted(kwargs.items())}".encode())
        if weights is not None:
            digest.update(spec.existing(Path(weights)).read_bytes())
        path = plugin_cache_dir(self.name) / f"{kwargs.get('component', 'model')}-{digest.hexdigest()[:16]}.pt2"
        if path.exists():
            return path
        assert spec.factory is not None  # fmt "module" is a factory spec (BackendBase.load)
        module_name, _, attr = spec.factory.partition(":")
        model = getattr(importlib.import_module(module_name), attr)(**kwargs).eval()
        args, dynamic = _example(spec)
        log.info("exporting %s to %s", spec.factory, path)
        program = torch.export.export(model, args, dynamic_shapes=dynamic)
        partial = path.with_name(f".{path.stem}.{os.getpid()}.pt2")  # torch.export.save wants the suffix
        torch.export.save(program, str(partial))
        os.replace(partial, path)
        return path

    def set_threads(self, n: int) -> None:
        check_threads(n)
        import torch

        torch.set_num_threads(n)
        try:
            torch.set_num_interop_threads(1)  # one op at a time: n is the number of cores used
        except RuntimeError:  # only settable before the first parallel op
            pass
        self._threads = n

    def get_threads(self) -> int:
        import torch

        return self._threads or torch.get_num_threads()

    def seed(self, n: int) -> None:
        import torch

        torch.manual_seed(n)

    def synchronize(self, device: str = "cpu") -> None:
        pass


def _example(spec: ModelSpec):
    """Example arguments and dynamic axes for exporting a zoo component: ``speechperf.zoo.examples`` states every
    width (``None`` in the catalog's shapes) and names every dynamic axis."""
    import torch
    from torch.export import Dim

    from speechperf.zoo.examples import example_inputs, input_shapes

    where = {k: spec.factory_kwargs[k] for k in ("model", "component", "preset")}
    feeds = example_inputs(where["model"], where["component"], where["preset"])
    shapes = input_shapes(where["model"], where["component"], where["preset"])
    names = [t.name for t in spec.inputs or ()] or list(feeds)
    args = tuple(torch.from_numpy(feeds[name]) for name in names)
    dynamic = tuple(
        {axis: Dim.AUTO for axis, size in enumerate(shapes[name]) if isinstance(size, str)} for name in names
    )
    return args, dynamic
