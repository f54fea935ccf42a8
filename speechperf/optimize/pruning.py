"""``speechperf optimize``'s pruning methods: the variants of a sparsity sweep, pruned alone or then quantized.

A pruning method (``Capabilities.pruning``: ``prune-l1-global``, ``prune-l1-layer``, ``prune-ffn-l1``,
``prune-ffn-l2``; what each does: speechperf.backends.torch.prune) runs at every level of ``--sparsity`` (``0.3``, or
a sweep ``0.1,0.3,0.5``): the variant ``prune-l1-global@0.3``. ``prune-l1-global+ort-dynamic`` prunes, then
quantizes the pruned model with the backend's int8 method: ``prune-l1-global@0.3+ort-dynamic``.

The weights are pruned by the backend that writes the zoo's weights (torch), and the stage's format is built from
them (speechperf.zoo.pruned): torch runs them eager, onnxruntime the pruned model's ONNX export, paddle its twin of
the network loaded with the same weights. On a backend other than the one that pruned, each pruned graph is checked
against the pruned model on that backend (``parity``), on the feeds of the held-out sample.

Measured from the files, never taken from what was asked: the sparsity (the share of the pruned layers' fp32
weights that are zero or removed, and of all the model's weights), and the files' size dense and compressed
(deflate, as a zip of the weights would ship): zeros left in dense tensors shrink only the compressed size.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend.quantization import check_method
from speechperf.errors import SpeechperfError
from speechperf.optimize.hook import QuantizationError

PREFIX = "prune-"
#: ``--sparsity`` when a pruning method is asked for without it.
DEFAULT_SPARSITY = (0.3,)


def is_pruning(name: str) -> bool:
    return name.startswith(PREFIX)


def parse_sparsity(text: str | None) -> tuple[float, ...]:
    """``--sparsity 0.3`` or ``0.1,0.3,0.5``: each a fraction in (0, 1), once; else one line naming the value."""
    from speechperf.values import split_items

    if text is None:
        return ()
    levels = []
    for item in split_items(text, "--sparsity") or ("",):
        try:
            value = float(item)
        except ValueError:
            value = math.nan
        if not 0 < value < 1:
            raise SpeechperfError(
                f"--sparsity {text!r}: {item!r} is no fraction between 0 and 1 (exclusive); give e.g. 0.3 or a "
                "sweep 0.1,0.3,0.5"
            )
        levels.append(value)
    if len(set(levels)) != len(levels):
        raise SpeechperfError(f"--sparsity {text!r} lists a level twice")
    return tuple(levels)


def split(method: str) -> tuple[str | None, str | None]:
    """``prune-l1-global+ort-dynamic`` -> (``prune-l1-global``, ``ort-dynamic``); ``ort-dynamic`` -> (None, it)."""
    if not is_pruning(method):
        return None, method
    prune, _, int8 = method.partition("+")
    return prune, int8 or None


def check_methods(backend, methods: tuple[str, ...], sparsity: tuple[float, ...]) -> tuple[str, ...]:
    """``--method`` and ``--sparsity`` against what ``backend`` offers: one line naming what is wrong."""
    from speechperf.backend.quantization import check_methods as check_quantization

    if not methods:
        check_quantization(backend, methods)  # its line names the methods
    offered = tuple(backend.capabilities.pruning)
    for method in methods:
        prune, int8 = split(method)
        if prune is not None and prune not in offered:
            raise SpeechperfError(
                f"unknown pruning method {prune!r} for backend {backend.name!r}; its pruning methods: "
                f"{', '.join(offered) or 'none'} (each may be followed by +INT8METHOD: prune, then quantize)"
            )
        if int8 is not None:
            check_method(backend, int8)
    if len(set(methods)) != len(methods):
        raise SpeechperfError(f"--method lists a method twice: {','.join(methods)}")
    if sparsity and not any(is_pruning(m) for m in methods):
        raise SpeechperfError(
            f"--sparsity is for pruning methods ({', '.join(offered) or 'none on ' + backend.name}); "
            f"--method names none: {','.join(methods)}"
        )
    return methods


def levels_for(methods: Iterable[str]) -> tuple[float, ...]:
    """The levels pruning runs at when ``--sparsity`` is not given: the default, where a method prunes."""
    return DEFAULT_SPARSITY if any(is_pruning(m) for m in methods) else ()


def variant_names(methods: Iterable[str], sparsity: tuple[float, ...]) -> list[str]:
    """Every variant of the study: each pruning method at each level (``prune-l1-global@0.3+ort-dynamic``)."""
    names = []
    for method in methods:
        prune, int8 = split(method)
        if prune is None:
            names.append(method)
            continue
        names += [f"{prune}@{level:g}" + (f"+{int8}" if int8 else "") for level in sparsity or DEFAULT_SPARSITY]
    return names


def parse_variant(name: str) -> tuple[str, float, str | None]:
    """``prune-l1-global@0.3+ort-dynamic`` -> (``prune-l1-global``, 0.3, ``ort-dynamic``)."""
    head, _, int8 = name.partition("+")
    prune, _, level = head.partition("@")
    return prune, float(level), int8 or None


@attrs.frozen
class Sparsity:
    """Measured from the weights files: the share of the pruned layers' fp32 weights that are zero (or removed),
    and of every weight of the model."""

    layers: float
    model: float


def measure_sparsity(fp32_weights: Path, pruned_weights: Path, targets: Iterable[str]) -> Sparsity:
    from safetensors.numpy import load_file

    dense, pruned = load_file(str(fp32_weights)), load_file(str(pruned_weights))
    targets = list(targets)
    total = sum(dense[name].size for name in targets)
    kept = sum(int(np.count_nonzero(pruned[name])) for name in targets)
    float_names = [k for k, v in dense.items() if np.issubdtype(v.dtype, np.floating)]
    model_total = sum(dense[k].size for k in float_names)
    model_kept = sum(int(np.count_nonzero(pruned[k])) for k in float_names if k in pruned)
    return Sparsity(1 - kept / total if total else 0.0, 1 - model_kept / model_total if model_total else 0.0)


def compressed_size(files: Iterable[Path], level: int = 6) -> int:
    """Bytes of ``files`` deflated at zip's default level (what a ``.zip`` of them holds, less its headers)."""
    size = 0
    for path in files:
        packer = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate, as zip stores it
        with open(path, "rb") as f:
            while chunk := f.read(1 << 22):
                size += len(packer.compress(chunk))
        size += len(packer.flush())
    return size


@attrs.define
class Pruned:
    """What pruning one variant gave: its config, the files each stage loads, the sparsity, the graphs' max
    relative difference to fp32 (None when an int8 method follows), the notes, and the parity of each graph with
    the pruned model on the backend that pruned it (None: the same backend)."""

    data: dict
    files: list[Path]
    sparsity: Sparsity
    graph_diff: float | None = None
    parity: float | None = None
    parity_text: str | None = None
    notes: list[str] = attrs.Factory(list)

    def made(self) -> tuple:
        """As ``speechperf.optimize.run.make_variant`` returns a variant: (config, bytes, graph diff, notes, op
        shares, the files the stages load)."""
        return self.data, sum(f.stat().st_size for f in self.files), self.graph_diff, self.notes, [], self.files


def make_pruned(backend, name: str, plans, stages, held_out, base: dict, out_dir: Path, general):
    """Prune every stage of ``plans`` for variant ``name`` (into ``<name>/stageN``, or ``<name>/pruned/stageN`` when
    an int8 method follows); returns (what it gave, the pruned stage plans to quantize next)."""
    from speechperf.benchmark.backend_files import files_of
    from speechperf.optimize.fidelity import graph_difference
    from speechperf.zoo.build import model_spec
    from speechperf.zoo.pruned import build_pruned

    method, level, int8 = parse_variant(name)
    data = json.loads(json.dumps(base))
    files, pruned_plans, layers, model, diffs, parities = [], [], [], [], [], []
    for plan, stage, check in zip(plans, stages, held_out):
        if plan.folder is None or plan.fmt is None:
            raise QuantizationError(
                f"{method} prunes a reference model of the zoo (model: NAME); stage{plan.index} runs {plan.label}"
            )
        folder = out_dir / name / ("pruned" if int8 else "") / f"stage{plan.index}"
        manifest = build_pruned(plan.folder, method, level, folder, [plan.fmt])
        data[f"stage{plan.index}"].update({"model_dir": str(folder.resolve()), "format": plan.fmt})
        found = measure_sparsity(
            plan.folder / "weights.safetensors", folder / "weights.safetensors", manifest["pruning"]["targets"]
        )
        layers.append(found.layers)
        model.append(found.model)
        pruned_plans.append(attrs.evolve(plan, graphs=_graphs_in(plan, folder, backend.name), folder=folder))
        for graph in plan.graphs:
            spec = model_spec(folder, graph.session, plan.fmt)
            files += [f for f in files_of(spec) if f not in files]
            if int8:
                continue  # the int8 graphs are loaded back and checked after quantizing
            mine = backend.load(spec, device=general.device, threads=general.threads)
            mine.inputs = stage.sessions[graph.session].inputs
            calls = check[graph.session]
            outputs = [mine(c) for c in calls]
            diffs.append(graph_difference([stage.sessions[graph.session](c) for c in calls], outputs))
            if manifest["pruning"]["backend"] != backend.name:
                parities.append(_parity(manifest["pruning"]["backend"], folder, graph.session, calls, outputs, general))
    pruned = Pruned(data, files, Sparsity(max(layers), max(model)), max(diffs) if diffs else None)
    if parities:
        pruned.parity = max(parities)
        pruned.parity_text = (
            f"{backend.name} vs the pruned weights on {manifest['pruning']['backend']}: max rel diff "
            f"{pruned.parity:.2g}"
        )
    return pruned, pruned_plans


def _graphs_in(plan, folder: Path, backend_name: str) -> tuple:
    """The stage's graphs as the pruned folder has them (each format built there that the backend runs, the
    stage's first), to quantize after pruning."""
    from speechperf.benchmark.backend_files import files_of
    from speechperf.optimize.variants import zoo_formats_on
    from speechperf.zoo.build import built_formats, model_spec, read_manifest

    built = built_formats(read_manifest(folder))
    formats = [plan.fmt] + [f for f in zoo_formats_on(backend_name) if f in built and f != plan.fmt]
    graphs = []
    for graph in plan.graphs:
        specs = [model_spec(folder, graph.session, f) for f in formats]
        specs = [s for s in specs if all(p.exists() for p in files_of(s))]
        graphs.append(attrs.evolve(graph, specs=tuple(specs)))
    return tuple(graphs)


def _parity(pruner: str, folder: Path, session_name: str, calls, outputs, general) -> float:
    """A pruned graph's outputs on this backend against the same pruned weights run eager by the backend that
    pruned them (``pruner``): the zoo twins share their weights, so they must agree as the unpruned ones do."""
    from speechperf.backend import hooks
    from speechperf.optimize.fidelity import graph_difference
    from speechperf.registry import get_backend
    from speechperf.zoo.build import load_session

    weights_backend = get_backend(pruner)
    fmt = hooks(weights_backend).default_zoo_format
    if fmt is None:
        raise QuantizationError(f"backend {pruner!r} names no zoo format to check the pruned graphs against")
    reference = load_session(folder, session_name, fmt, threads=general.threads, backend=weights_backend)
    return graph_difference([reference(c) for c in calls], outputs)
