"""Magnitude pruning of a reference model in torch (``torch.nn.utils.prune``), made permanent (``prune.remove``),
written as a zoo model folder's weights (``speechperf.zoo.pruned``): every other format is built from them.

- ``prune-l1-global``: ``prune.global_unstructured(L1Unstructured)`` over the weights of every ``nn.Linear``
  (attention projections included) and ``nn.Conv1d`` / ``nn.Conv2d`` together: the smallest |w| of the whole model
  are zeroed, so layers lose different shares.
- ``prune-l1-layer``: ``prune.l1_unstructured`` on each of those weights: every layer loses the same share.
- ``prune-ffn-l1`` / ``prune-ffn-l2``: structured: the FFN neurons (the rows of ``fc1``, the columns of ``fc2`` of
  each feed-forward pair) of smallest L1 / L2 norm of their input weights (``prune.ln_structured`` on ``fc1``,
  ``dim=0``), the same count in every layer; the pairs are rebuilt smaller (the model's ``ffn`` size becomes the
  count kept), so the model does less work on a dense runtime. Embeddings and norms are never pruned.

The zeros of an unstructured method stay in dense tensors: the file is as large, only a compressor (zip) shrinks it.
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs
import torch
from torch.nn.utils import prune

from speechperf.backends.torch.models import build, parent_of
from speechperf.optimize.hook import QuantizationError

UNSTRUCTURED = {"prune-l1-global": "global", "prune-l1-layer": "layer"}
STRUCTURED = {"prune-ffn-l1": 1, "prune-ffn-l2": 2}
METHODS = (*UNSTRUCTURED, *STRUCTURED)
#: The layers unstructured pruning acts on (attention projections are nn.Linear).
PRUNABLE = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)


def _components(model, hparams, weights: Path) -> dict[str, torch.nn.Module]:
    from safetensors.torch import load_file

    components = build(model.name, hparams)
    parent_of(components).load_state_dict(load_file(str(weights)))
    for module in components.values():
        module.eval()
    return components


def prunable(parent: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    return [(name, m) for name, m in parent.named_modules() if isinstance(m, PRUNABLE)]


def ffn_pairs(parent: torch.nn.Module, width: int) -> list[tuple[str, torch.nn.Linear, torch.nn.Linear]]:
    """Each feed-forward pair (``fc1`` then ``fc2``, both nn.Linear, ``width`` neurons between them)."""
    pairs = []
    for name, m in parent.named_modules():
        fc1, fc2 = getattr(m, "fc1", None), getattr(m, "fc2", None)
        if isinstance(fc1, torch.nn.Linear) and isinstance(fc2, torch.nn.Linear):
            if fc1.out_features == width == fc2.in_features:
                pairs.append((f"{name}." if name else "", fc1, fc2))
    return pairs


def _unstructured(parent, how: str, sparsity: float) -> list[str]:
    layers = prunable(parent)
    if not layers:
        raise QuantizationError(f"the model has no Linear or Conv layer to prune ({type(parent).__name__})")
    if how == "global":
        prune.global_unstructured(
            [(m, "weight") for _, m in layers], pruning_method=prune.L1Unstructured, amount=sparsity
        )
    else:
        for _, m in layers:
            prune.l1_unstructured(m, "weight", amount=sparsity)
    for _, m in layers:
        prune.remove(m, "weight")  # the mask applied to the weight itself: a plain nn.Linear again
    return [f"{name}.weight" for name, _ in layers]


def _structured(model, hparams, components, norm: int, sparsity: float):
    """The FFN pairs with the lowest-norm neurons removed; returns (components rebuilt smaller, the new ``ffn``,
    the pruned weights' names)."""
    width = getattr(hparams, "ffn", None)
    if not isinstance(width, int):
        raise QuantizationError(f"{model.name} has no `ffn` size in its hyperparameters: no FFN neurons to remove")
    parent = parent_of(components)
    pairs = ffn_pairs(parent, width)
    if not pairs:
        raise QuantizationError(f"{model.name} has no feed-forward pair (fc1, fc2) of width {width}")
    state = {k: v.detach().clone() for k, v in parent.state_dict().items()}
    kept_count = None
    for prefix, fc1, _ in pairs:
        prune.ln_structured(fc1, "weight", amount=sparsity, n=norm, dim=0)
        mask: torch.Tensor = fc1.get_buffer("weight_mask")
        kept = mask[:, 0].nonzero().flatten()  # the neurons whose input weights survive, in order
        prune.remove(fc1, "weight")
        kept_count = len(kept)
        state[f"{prefix}fc1.weight"] = state[f"{prefix}fc1.weight"][kept].contiguous()
        state[f"{prefix}fc1.bias"] = state[f"{prefix}fc1.bias"][kept].contiguous()
        state[f"{prefix}fc2.weight"] = state[f"{prefix}fc2.weight"][:, kept].contiguous()
    if not kept_count:
        raise QuantizationError(f"sparsity {sparsity:g} removes every FFN neuron of {model.name}")
    smaller = attrs.evolve(hparams, ffn=kept_count)
    rebuilt = build(model.name, smaller)
    try:
        parent_of(rebuilt).load_state_dict(state)
    except RuntimeError as exc:  # a layer sized by ``ffn`` that is no fc1/fc2 pair
        raise QuantizationError(f"{model.name}: the smaller FFN does not rebuild: {str(exc).splitlines()[0]}") from None
    for module in rebuilt.values():
        module.eval()
    names = [f"{p}fc1.weight" for p, _, _ in pairs] + [f"{p}fc2.weight" for p, _, _ in pairs]
    return rebuilt, kept_count, names


#: The zoo formats this backend writes by exporting the pruned model -> the kind of export.
EXPORTS = {"torchscript": "torchscript", "onnx-torch": "onnx"}


def prune_reference(model_name: str, preset: str, source: Path, method: str, sparsity: float, folder: Path, exports):
    """Prune the weights ``source`` of zoo model ``model_name`` and write ``folder/weights.safetensors`` (and each
    component in the zoo formats of ``exports``, TorchScript or ONNX, into ``folder/torch``); returns what
    ``speechperf.zoo.pruned`` records."""
    from speechperf.backends.torch.zoo import export_component, parameter_count, save_weights
    from speechperf.zoo.build import Artifact
    from speechperf.zoo.catalog import get_model

    if method not in METHODS:
        raise QuantizationError(f"unknown pruning method {method!r}; torch prunes with: {', '.join(METHODS)}")
    model = get_model(model_name)
    hparams = model.hparams(preset)
    components = _components(model, hparams, source)
    architecture = {}
    with torch.no_grad():
        if method in UNSTRUCTURED:
            targets = _unstructured(parent_of(components), UNSTRUCTURED[method], sparsity)
        else:
            components, width, targets = _structured(model, hparams, components, STRUCTURED[method], sparsity)
            architecture = {"ffn": width}
            hparams = attrs.evolve(hparams, ffn=width)
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    written = save_weights(components, folder / "weights.safetensors", model.artifacts)
    artifacts = [
        Artifact(path, "weights" if key == "weights" else "array", None, time.perf_counter() - start)
        for key, path in written.items()
    ]
    kinds = tuple(EXPORTS[f] for f in exports if f in EXPORTS)
    if kinds:
        for comp in model.components:
            module = components[comp.name]
            for fmt, (path, secs) in export_component(model, comp, preset, module, folder / "torch", kinds).items():
                artifacts.append(Artifact(path, "onnx-torch" if fmt == "onnx" else "torchscript", comp.name, secs))
    return {
        "weights": written["weights"],
        "artifacts": tuple(artifacts),
        "architecture": architecture,
        "targets": targets,
        "parameter_count": parameter_count(components),
    }
