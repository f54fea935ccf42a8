"""Build the reference models in paddle from the torch weights: inference models (PIR ``.json`` + ``.pdiparams``)
and ONNX through paddle2onnx (``speechperf.zoo``).

paddle never initialises weights of its own: every layer is loaded from the torch-layout ``.safetensors`` file
that the torch build wrote, so both frameworks run the same numbers.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.models import build, parent_of
from speechperf.backends.paddle.session import input_spec, static_inputs
from speechperf.backends.paddle.weights import load_weights
from speechperf.zoo.catalog import Component, get_model

paddle = import_paddle()

ONNX_OPSET = 17


def hparams_of(model: str, preset: str, architecture=None):
    """The preset's sizes, with ``architecture``'s in their place (a pruned model's smaller ``ffn``)."""
    import attrs

    return attrs.evolve(get_model(model).hparams(preset), **(architecture or {}))


def load_components(model: str, preset: str, weights: Path, architecture=None) -> dict:
    """Every component of ``model``, sharing one parent layer loaded from ``weights``."""
    components = build(model, hparams_of(model, preset, architecture))
    load_weights(parent_of(components), Path(weights))
    for layer in components.values():
        layer.eval()
    return components


def load_component(model: str, preset: str, component: str, weights: str | None = None, architecture=None):
    """Factory for a ``ModelSpec``: one component of a reference model. ``weights`` is loaded here because the
    layer session would otherwise read it with the component's own (``model.``-prefixed) parameter names."""
    if weights is None:
        components = build(model, hparams_of(model, preset, architecture))
    else:
        components = load_components(model, preset, Path(weights), architecture)
    return components[component]


def _input_spec(comp: Component) -> list:
    return [input_spec(*one) for one in static_inputs(comp.inputs, f"zoo component {comp.name}")]


def export_component(comp: Component, layer, out_dir: Path) -> dict[str, tuple[Path, float]]:
    """Write ``<component>.json`` + ``.pdiparams`` and ``<component>.onnx``; return {format: (path, seconds)}."""
    import paddle2onnx

    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / comp.name
    start = time.perf_counter()
    static = paddle.jit.to_static(layer, input_spec=_input_spec(comp), full_graph=True)
    paddle.jit.save(static, str(prefix))
    model_path = prefix.with_suffix(".json")
    save_seconds = time.perf_counter() - start

    start = time.perf_counter()
    onnx_path = prefix.with_suffix(".onnx")
    with _stdout_to_stderr():
        paddle2onnx.export(
            str(model_path),
            str(prefix.with_suffix(".pdiparams")),
            str(onnx_path),
            opset_version=ONNX_OPSET,
            enable_onnx_checker=True,
        )
    _name_outputs(onnx_path, comp.output_names)
    return {"inference": (model_path, save_seconds), "onnx": (onnx_path, time.perf_counter() - start)}


@contextlib.contextmanager
def _stdout_to_stderr():
    """paddle2onnx and polygraphy print progress on stdout (C++ and Python); stdout is for data in speechperf."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _name_outputs(path: Path, names: list[str]) -> None:
    """paddle2onnx names graph outputs after paddle's internal variables (or, for an output that passes an input
    through, after the input); give them the component's names through Identity nodes."""
    import onnx

    model = onnx.load(str(path))
    outputs = model.graph.output
    if len(outputs) != len(names):
        raise RuntimeError(f"{path} has {len(outputs)} outputs; the component declares {names}")
    for out, new in zip(outputs, names):
        if out.name != new:
            model.graph.node.append(onnx.helper.make_node("Identity", [out.name], [new], name=f"name_{new}"))
            out.name = new
    onnx.save(model, str(path))


def build_reference(name: str, preset: str, weights: Path, folder: Path, architecture=None) -> list:
    """Every component of ``name``, loaded from the torch ``weights``, exported into ``folder/paddle``."""
    from speechperf.zoo.build import Artifact

    components = load_components(name, preset, weights, architecture)
    artifacts = []
    for comp in get_model(name).components:
        for fmt, (path, secs) in export_component(comp, components[comp.name], folder / "paddle").items():
            artifacts.append(Artifact(path, "onnx-paddle" if fmt == "onnx" else "paddle-inference", comp.name, secs))
            if fmt == "inference":
                artifacts.append(Artifact(path.with_suffix(".pdiparams"), "paddle-params", comp.name, 0.0))
    return artifacts
