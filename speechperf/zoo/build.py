"""Build reference models into a directory, one folder per model with a manifest, and find them again.

Layout of ``<out>/<model>/``::

    weights.safetensors          torch layout, written by the torch build from the model's seed
    <buffer>.npy                 arrays a numpy adapter needs (the unit extractor's codebook)
    torch/<component>.pt         TorchScript
    torch/<component>.onnx       ONNX from torch.onnx.export
    paddle/<component>.json      paddle inference model (PIR) + .pdiparams, from the same weights
    paddle/<component>.onnx      ONNX from paddle2onnx
    manifest.json

The frameworks are reached through the backend registry (``build_reference`` on the torch and paddle backends);
this module imports none of them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path

import attrs

from speechperf import __version__
from speechperf.backend import ModelSpec, TensorInfo
from speechperf import cache
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.registry import get_backend
from speechperf.zoo.catalog import MODEL_MODULES, ReferenceModel, check_preset, get_model

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = 1

#: Every format a component is built in: name -> (backend that loads it, file inside the model folder or None for
#: a factory + weights). ``torch-eager`` is the reference the parity tests compare the others with.
FORMATS = {
    "torch-eager": ("torch", None),
    "torchscript": ("torch", "torch/{component}.pt"),
    "paddle-eager": ("paddle", None),
    "paddle-inference": ("paddle", "paddle/{component}.json"),
    "onnx-torch": ("onnxruntime", "torch/{component}.onnx"),
    "onnx-paddle": ("onnxruntime", "paddle/{component}.onnx"),
}
#: Formats the zoo does not build but a model folder may hold: the int8 variants `speechperf optimize` writes.
VARIANT_FORMATS = {
    "torch-export": ("torch", "torch/{component}.pt2"),
}
LOADABLE_FORMATS = {**FORMATS, **VARIANT_FORMATS}
FACTORIES = {
    "torch-eager": "speechperf.backends.torch.zoo:load_component",
    "paddle-eager": "speechperf.backends.paddle.zoo:load_component",
}


@attrs.frozen
class Artifact:
    """One file a backend wrote: ``component`` is None for files shared by all components (weights)."""

    path: Path
    format: str
    component: str | None = None
    seconds: float = 0.0


@attrs.frozen
class TorchBuild:
    """What the torch (source framework) build returns: the weights and its exported files."""

    parameter_count: int
    weights: Path
    artifacts: tuple[Artifact, ...]


def cache_root() -> Path:
    """Built models live in ``<cache>/zoo/<preset>/<model>`` (see speechperf.cache)."""
    return cache.cache_dir() / "zoo"


def cache_dir(preset: str) -> Path:
    return cache_root() / check_preset(preset)


def build_model(name: str, preset: str, out: Path) -> dict:
    """Build every component of model ``name`` in every format into ``out/<name>``; return its manifest.

    The folder is written under a temporary name and renamed into place, so a half-finished build is never seen.
    """
    check_preset(preset)
    model = get_model(name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out))
    try:
        manifest = _build_into(model, preset, work)
        final = out / name
        if final.exists():
            shutil.rmtree(final)
        work.rename(final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return manifest


def _build_into(model: ReferenceModel, preset: str, folder: Path) -> dict:
    torch_backend, paddle_backend = get_backend("torch"), get_backend("paddle")
    torch_backend.require_available()
    paddle_backend.require_available()
    built: TorchBuild = torch_backend.build_reference(model.name, preset, folder)
    paddle_files = paddle_backend.build_reference(model.name, preset, built.weights, folder)
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "model": model.name,
        "preset": preset,
        "task": model.task,
        "description": model.description,
        "architecture": attrs.asdict(model.hparams(preset)),
        "parameter_count": built.parameter_count,
        "seed": model.seed,
        "weights": "pretrained" if model.pretrained is not None else "seeded",
        "source_framework": "torch",
        "weights_layout": "torch (nn.Linear weight [out, in]); paddle transposes on load",
        "tolerance": model.tolerance,
        "components": [
            {
                "name": comp.name,
                "inputs": [_tensor(t) for t in comp.inputs],
                "outputs": [_tensor(t) for t in comp.outputs],
                "dynamic_axes": {k: {str(a): n for a, n in v.items()} for k, v in comp.dynamic_axes().items()},
            }
            for comp in model.components
        ],
        "files": [_file_entry(folder, a) for a in (*built.artifacts, *paddle_files)],
        "speechperf_version": __version__,
        "frameworks": {
            "torch": torch_backend.availability().version,
            "paddle": paddle_backend.availability().version,
        },
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _tensor(t: TensorInfo) -> dict:
    return {"name": t.name, "dtype": t.dtype, "shape": list(t.shape) if t.shape is not None else None}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_entry(folder: Path, artifact: Artifact) -> dict:
    path = Path(artifact.path)
    return {
        "path": path.relative_to(folder).as_posix(),
        "format": artifact.format,
        "component": artifact.component,
        "bytes": path.stat().st_size,
        "sha256": sha256(path),
        "export_seconds": round(artifact.seconds, 3),
    }


def build_all(preset: str, out: Path, models: list[str] | None = None) -> list[dict]:
    return [build_model(name, preset, Path(out)) for name in (models or list(MODEL_MODULES))]


def read_manifest(folder: Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise ModelFileError(f"no {MANIFEST} in {folder}; build it with: speechperf zoo build --out DIR")
    return json.loads(path.read_text())


def is_built(folder: Path) -> bool:
    """A manifest of this speechperf version and of the catalog's current architecture, whose files all exist."""
    try:
        manifest = read_manifest(folder)
        model = get_model(manifest["model"])
        architecture = attrs.asdict(model.hparams(manifest["preset"]))
    except (SpeechperfError, ValueError, KeyError):
        return False
    if manifest.get("speechperf_version") != __version__ or manifest.get("schema") != MANIFEST_SCHEMA:
        return False
    if json.loads(json.dumps(architecture)) != manifest.get("architecture") or manifest.get("seed") != model.seed:
        return False  # the catalog changed since this was built
    return all((Path(folder) / f["path"]).exists() for f in manifest["files"])


def ensure_built(model: str, preset: str, root: Path | None = None) -> Path:
    """The folder of ``model`` built at ``preset`` under ``root`` (default: the cache), building it if needed."""
    get_model(model)
    base = Path(root) if root is not None else cache_dir(preset)
    folder = base / model
    if not is_built(folder):
        build_model(model, preset, base)
    return folder


def model_spec(folder: Path, component: str, fmt: str) -> tuple[str, ModelSpec]:
    """(backend name, ModelSpec) for one component of a built model in one of ``FORMATS``."""
    if fmt not in LOADABLE_FORMATS:
        raise SpeechperfError(f"unknown zoo format {fmt!r}; known formats: {', '.join(LOADABLE_FORMATS)}")
    folder = Path(folder)
    manifest = read_manifest(folder)
    model = get_model(manifest["model"])
    comp = model.component(component)
    backend, pattern = LOADABLE_FORMATS[fmt]
    if pattern is None:
        spec = ModelSpec(
            factory=FACTORIES[fmt],
            factory_kwargs={
                "model": model.name,
                "preset": manifest["preset"],
                "component": component,
                "weights": str(folder / "weights.safetensors"),
            },
            inputs=comp.inputs,
            outputs=comp.outputs,
        )
    else:
        # A quantized variant's manifest says how its files load (e.g. paddle's oneDNN int8 predictor).
        options = manifest.get("load_options", {}).get(fmt, {})
        spec = ModelSpec(path=folder / pattern.format(component=component), inputs=comp.inputs, outputs=comp.outputs,
                         options=options)
    return backend, spec


def load_session(folder: Path, component: str, fmt: str, threads: int | None = None, device: str = "cpu"):
    """A session over one component of a built model in one format, through the backend registry."""
    backend, spec = model_spec(folder, component, fmt)
    session = get_backend(backend).load(spec, device=device, threads=threads)
    # ORT reads shapes from the graph (symbolic names differ per exporter); declare the catalog's instead, so every
    # format checks feeds the same way and names the same axes in its errors.
    session.inputs = spec.inputs
    return session
