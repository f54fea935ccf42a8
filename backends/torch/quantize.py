"""Post-training int8 quantization in torch, saved in formats the torch backend loads without unpickling.

- ``torchao-dynamic``: torchao's ``quantize_(model, Int8DynamicActivationInt8WeightConfig())``: int8 weights, int8
  activations quantized per call. The quantized weights are tensor subclasses, which ``torch.export.save`` would
  pickle; ``torchao.utils.unwrap_tensor_subclass`` turns them into plain int8 tensors and scales first, so the
  ``.pt2`` holds raw tensors only.
- ``pt2e-static``: ``torch.export`` -> ``prepare_pt2e`` with ``X86InductorQuantizer`` (torchao.quantization.pt2e) ->
  calibration on real feeds -> ``convert_pt2e``; saved as a ``.pt2``. The converted graph keeps explicit
  quantize/dequantize ops that only ``torch.compile`` (Inductor, with freezing) fuses into int8 kernels, so its
  load options say ``compile: default, compile_freezing: true`` (the compile is the variant's cold start).
- ``legacy-dynamic``: ``torch.ao.quantization.quantize_dynamic`` (nn.Linear -> dynamic int8 linear with fbgemm
  kernels), traced and frozen to TorchScript. torch deprecates this API; its warning is passed on once.

- ``fp32-export``: no quantization: the fp32 module exported exactly as the int8 programs are (``.pt2``), so that a
  table can tell the share of a speed-up (or a size) that comes from the container from the share that comes from
  int8.

All read an ``nn.Module`` (a reference model's factory + weights); pt2e also reads a ``.pt2`` program.
Exported graphs keep the dynamic axes of the source (``Dim.AUTO``), from an example with batch 2.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import numpy as np
import torch

from speechperf.errors import first_line
from speechperf.optimize.hook import QuantizationError, QuantizedModel, QuantizeSource

READS = {
    "torchao-dynamic": ("module",),
    "pt2e-static": ("module", "export"),
    "legacy-dynamic": ("module",),
    "fp32-export": ("module",),
}
SUFFIX_FORMATS = {".pt2": "export", ".pt": "torchscript", ".jit": "torchscript", ".ts": "torchscript"}


def _fmt(spec) -> str | None:
    if spec.factory:
        return "module"
    return SUFFIX_FORMATS.get(spec.path.suffix) if spec.path is not None else None


def _load_module(spec) -> torch.nn.Module:
    from speechperf.backends.torch.session import LOADERS

    fmt = _fmt(spec)
    assert fmt is not None  # the spec was picked by its format (QuantizeSource.spec_for)
    module = LOADERS[fmt](spec, "cpu").module
    assert isinstance(module, torch.nn.Module)  # what the loaders give (a compile option wrapper is none to quantize)
    return module


def _args(spec, feeds) -> tuple[torch.Tensor, ...]:
    names = [t.name for t in spec.inputs] if spec.inputs else list(feeds)
    return tuple(torch.from_numpy(np.ascontiguousarray(feeds[n])) for n in names)


def _dynamic_shapes(spec, source: QuantizeSource, args) -> tuple:
    from torch.export import Dim

    names = [t.name for t in spec.inputs] if spec.inputs else list(source.example_feeds)
    return tuple({axis: Dim.AUTO for axis in source.dynamic_axes.get(n, {})} or None for n in names)


def _export(module, spec, source: QuantizeSource):
    args = _args(spec, source.example_feeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(module, args, dynamic_shapes=_dynamic_shapes(spec, source, args))
    return drop_unused_weights(program)


def drop_unused_weights(program):
    """Remove parameters, buffers and constants that no op reads (a component wrapper holds its whole parent model,
    so the encoder's program would otherwise carry the decoder's weights too)."""
    from torch.export.graph_signature import InputKind

    signature = program.graph_signature
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
    keep = []
    for spec, node in zip(list(signature.input_specs), placeholders):
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR) and not node.users:
            program.graph.erase_node(node)
            (program.constants if spec.kind == InputKind.CONSTANT_TENSOR else program.state_dict).pop(spec.target, None)
        else:
            keep.append(spec)
    signature.input_specs[:] = keep
    program.graph_module.recompile()
    return program


def _torchao(module, spec, source, out: Path) -> QuantizedModel:
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    from torchao.utils import unwrap_tensor_subclass

    quantize_(module, Int8DynamicActivationInt8WeightConfig())
    program = _export(unwrap_tensor_subclass(module), spec, source)
    path = out.with_suffix(".pt2")
    torch.export.save(program, str(path))
    return QuantizedModel((path,), "export")


def _pt2e(module, spec, source, out: Path) -> QuantizedModel:
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as x86
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if not source.calibration:
        raise QuantizationError(f"pt2e-static: no calibration feeds for {source.name}")
    graph = module if isinstance(module, torch.fx.GraphModule) else _export(module, spec, source).module()
    quantizer = x86.X86InductorQuantizer()
    quantizer.set_global(x86.get_default_x86_inductor_quantization_config())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_pt2e(graph, quantizer)
        with torch.no_grad():
            for feeds in source.calibration:
                prepared(*_args(spec, feeds))
        converted = convert_pt2e(prepared)
    program = _export(converted, spec, source)
    path = out.with_suffix(".pt2")
    torch.export.save(program, str(path))
    # Loaded through torch.compile with Inductor freezing, which fuses its quantize/dequantize ops into oneDNN int8
    # kernels; run as exported they are not fused and the graph is slower than fp32.
    return QuantizedModel((path,), "export", options={"compile": "default", "compile_freezing": True})


def _legacy(module, spec, source, out: Path) -> QuantizedModel:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import torch.ao.quantization as tq

        quantized = tq.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)
    deprecations = [
        str(w.message).strip().splitlines()[0]
        for w in caught
        if issubclass(w.category, (DeprecationWarning, FutureWarning, UserWarning)) and "deprecated" in str(w.message)
    ]
    args = _args(spec, source.example_feeds)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        traced = torch.jit.freeze(torch.jit.trace(quantized, args, check_trace=False).eval())
    path = out.with_suffix(".pt")
    traced.save(str(path))
    # The first deprecation is the API's own ("torch.ao.quantization is deprecated ..."); one is enough to show.
    notes = (f"legacy-dynamic: torch says: {deprecations[0]}",) if deprecations else ()
    return QuantizedModel((path,), "torchscript", notes=notes)


def _fp32_export(module, spec, source, out: Path) -> QuantizedModel:
    program = _export(module, spec, source)
    path = out.with_suffix(".pt2")
    torch.export.save(program, str(path))
    return QuantizedModel((path,), "export")


METHODS = {"torchao-dynamic": _torchao, "pt2e-static": _pt2e, "legacy-dynamic": _legacy, "fp32-export": _fp32_export}


def quantize(backend, method: str, source: QuantizeSource, out_dir: Path) -> QuantizedModel:
    spec = source.spec_for(READS[method], method, _fmt)
    out_dir.mkdir(parents=True, exist_ok=True)
    module = copy.deepcopy(_load_module(spec))
    try:
        return METHODS[method](module, spec, source, out_dir / source.name)
    except QuantizationError:
        raise
    except Exception as exc:
        raise QuantizationError(f"{method} on {source.name}: {type(exc).__name__}: {first_line(exc)}") from None
