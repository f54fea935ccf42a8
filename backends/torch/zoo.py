"""Build the reference models in torch: seeded weights, TorchScript and ONNX (``speechperf.zoo``).

torch is the source framework: it initialises the weights from the seed and writes them (torch layout,
``.safetensors``); paddle loads that file. Every graph is exported with the component's named axes dynamic, from an
example batch of 2: with an example batch of 1 an exporter may treat batch as a broadcastable constant 1.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import torch

from speechperf.backends.torch.models import build, parent_of
from speechperf.zoo.catalog import Component, ReferenceModel

EXAMPLE_BATCH = 2
ONNX_OPSET = 17


def init_components(model: ReferenceModel, preset: str) -> dict[str, torch.nn.Module]:
    """The components with the model's seeded initial weights (the same weights on every call), or its real
    weights for a pretrained model."""
    torch.manual_seed(model.seed)
    components = build(model.name, model.hparams(preset))
    if model.pretrained is not None and model.is_pretrained(preset):
        arrays = model.pretrained(model.hparams(preset))
        parent_of(components).load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    for module in components.values():
        module.eval()
    return components


def load_component(
    model: str, preset: str, component: str, weights: str | None = None, architecture=None
) -> torch.nn.Module:
    """Factory for a ``ModelSpec``: one component of a reference model, with the weights file loaded if given;
    ``architecture``: sizes in place of the preset's (a pruned model's smaller ``ffn``)."""
    import attrs

    from speechperf.zoo.catalog import get_model

    components = build(model, attrs.evolve(get_model(model).hparams(preset), **(architecture or {})))
    if weights is not None:
        from safetensors.torch import load_file

        parent_of(components).load_state_dict(load_file(weights))
    return components[component].eval()


def save_weights(components: dict[str, torch.nn.Module], path: Path, artifacts: tuple[str, ...]) -> dict[str, Path]:
    """Write the parent's state dict, and each artifact buffer as ``<name>.npy`` beside it; return the paths."""
    from safetensors.torch import save_file

    state = {k: v.contiguous() for k, v in parent_of(components).state_dict().items()}
    save_file(state, str(path))
    written = {"weights": path}
    for name in artifacts:
        extra = path.with_name(f"{name}.npy")
        np.save(extra, state[name].numpy(), allow_pickle=False)
        written[name] = extra
    return written


def parameter_count(components: dict[str, torch.nn.Module]) -> int:
    return sum(p.numel() for p in parent_of(components).parameters())


def _example_args(model: ReferenceModel, comp: Component, preset: str) -> tuple[torch.Tensor, ...]:
    feeds = model.example_feeds(comp.name, preset, EXAMPLE_BATCH, comp.test_lengths[1], np.random.default_rng(0))
    return tuple(torch.from_numpy(feeds[t.name]) for t in comp.inputs)


def export_component(
    model: ReferenceModel,
    comp: Component,
    preset: str,
    module: torch.nn.Module,
    out_dir: Path,
    kinds: tuple[str, ...] = ("torchscript", "onnx"),
) -> dict[str, tuple[Path, float]]:
    """Write ``<component>.pt`` (TorchScript) and ``<component>.onnx`` into ``out_dir``.

    Returns {format: (path, seconds)}. Both are traced from an example batch; the models are written so that the
    trace keeps batch and time symbolic (sizes read with ``.shape`` inside ops, no shape tables), and the parity
    tests run both at three lengths and two batch sizes. ``torch.export`` + the dynamo ONNX exporter also work on
    these models but take 10-30 s per graph here, against ~1 s for tracing.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    args = _example_args(model, comp, preset)
    written: dict[str, tuple[Path, float]] = {}
    if "torchscript" in kinds:
        written["torchscript"] = _torchscript(comp, module, args, out_dir)
    if "onnx" not in kinds:
        return written
    start = time.perf_counter()
    onnx_path = out_dir / f"{comp.name}.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            args,
            str(onnx_path),
            input_names=comp.input_names,
            output_names=comp.output_names,
            dynamic_axes=comp.dynamic_axes(),
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
    written["onnx"] = (onnx_path, time.perf_counter() - start)
    return written


def _torchscript(comp: Component, module: torch.nn.Module, args, out_dir: Path) -> tuple[Path, float]:
    start = time.perf_counter()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # TracerWarnings about Python values; the parity tests check the result
        traced = torch.jit.trace(module, args, check_trace=False)
        # Freezing keeps only the weights this component uses (a traced wrapper holds the whole parent model).
        traced = torch.jit.freeze(traced.eval())
    script = out_dir / f"{comp.name}.pt"
    traced.save(str(script))
    return script, time.perf_counter() - start


def build_reference(name: str, preset: str, folder: Path):
    """Seeded weights into ``folder/weights.safetensors`` and every component exported into ``folder/torch``."""
    from speechperf.zoo.build import Artifact, SourceBuild
    from speechperf.zoo.catalog import get_model

    model = get_model(name)
    components = init_components(model, preset)
    start = time.perf_counter()
    written = save_weights(components, folder / "weights.safetensors", model.artifacts)
    seconds = time.perf_counter() - start
    artifacts = [
        Artifact(path, "weights" if key == "weights" else "array", None, seconds) for key, path in written.items()
    ]
    for comp in model.components:
        for fmt, (path, secs) in export_component(model, comp, preset, components[comp.name], folder / "torch").items():
            artifacts.append(Artifact(path, "onnx-torch" if fmt == "onnx" else "torchscript", comp.name, secs))
    return SourceBuild(parameter_count(components), written["weights"], tuple(artifacts))
