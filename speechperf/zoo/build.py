"""Build reference models into a directory, one folder per model with a manifest, and find them again.

Layout of ``<out>/<model>/``::

    weights.safetensors          torch layout, written by the torch build from the model's seed
    <buffer>.npy                 arrays a numpy adapter needs (the unit extractor's codebook)
    torch/<component>.pt         TorchScript
    torch/<component>.onnx       ONNX from torch.onnx.export
    paddle/<component>.json      paddle inference model (PIR) + .pdiparams, from the same weights
    paddle/<component>.onnx      ONNX from paddle2onnx
    manifest.json

The frameworks are reached through the backend registry: each backend declares the zoo formats it builds
(``zoo_formats``) and builds them in ``build_reference``; the one with ``builds_reference_weights`` writes the weights
first and the others read them. This module imports none of them and names none.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import attrs

from speechperf import cache
from speechperf.backend import ModelSpec, TensorInfo, ZooFormat, hooks
from speechperf.errors import ModelFileError, SpeechperfError, first_line
from speechperf.outputs import atomic_folder, check_output_path, file_problem, file_sha256, write_text_atomic
from speechperf.registry import get_backend
from speechperf.zoo.catalog import (
    MODEL_MODULES,
    PRETRAINED_MODELS,
    ReferenceModel,
    check_preset,
    definition_module,
    get_model,
)

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = 1


def zoo_builders() -> list:
    """The registered backends that build zoo formats (``zoo_formats``), the one building the weights first."""
    from speechperf.registry import known_backends

    builders = []
    for name in known_backends():
        try:
            backend = get_backend(name)
        except SpeechperfError:  # a broken plugin builds nothing; `speechperf backends` reports it
            continue
        if hooks(backend).zoo_formats:
            builders.append(backend)
    builders.sort(key=lambda b: not hooks(b).builds_reference_weights)
    return builders


def zoo_formats(variants: bool = False) -> dict[str, tuple[str, ZooFormat]]:
    """Every format a component is built in: name -> (backend that declares it, ZooFormat); with ``variants`` also
    the formats only `speechperf optimize`'s variants have. ``torch-eager`` (the weights' own framework, eager) is
    the reference the parity tests compare the others with."""
    return {
        name: (b.name, zf)
        for b in zoo_builders()
        for name, zf in hooks(b).zoo_formats.items()
        if variants or not zf.variant
    }


def __getattr__(name: str):
    if name == "FORMATS":  # computed from the registry when asked for, so importing this module loads no plugin
        return zoo_formats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def runnable_formats(backend, variants: bool = False) -> list[str]:
    """The zoo formats ``backend`` runs: those whose files are in a format it loads."""
    formats = zoo_formats(variants)
    return [name for name, (_, zf) in formats.items() if zf.format in backend.capabilities.formats]


def backend_for(fmt: str):
    """The backend that loads zoo format ``fmt`` when none is named: the one that built it if it can, else the
    first registered backend that loads its files."""
    from speechperf.registry import known_backends

    builder, zf = _zoo_format(fmt)
    candidates = [builder] + [n for n in known_backends() if n != builder]
    for name in candidates:
        try:
            backend = get_backend(name)
        except SpeechperfError:
            continue
        if zf.format in backend.capabilities.formats:
            return backend
    raise SpeechperfError(f"no registered backend loads zoo format {fmt!r} ({zf.format} files)")


def _zoo_format(fmt: str) -> tuple[str, ZooFormat]:
    formats = zoo_formats(variants=True)
    if fmt not in formats:
        raise SpeechperfError(f"unknown zoo format {fmt!r}; known formats: {', '.join(formats)}")
    return formats[fmt]


@attrs.frozen
class Artifact:
    """One file a backend wrote: ``component`` is None for files shared by all components (weights)."""

    path: Path
    format: str
    component: str | None = None
    seconds: float = 0.0


@attrs.frozen
class SourceBuild:
    """What the build of the backend writing the weights (``builds_reference_weights``) returns."""

    parameter_count: int
    weights: Path
    artifacts: tuple[Artifact, ...]


def cache_root() -> Path:
    """Built models live in ``<cache>/zoo/<preset>/<model>`` (see speechperf.cache)."""
    return cache.cache_dir() / "zoo"


def cache_dir(preset: str) -> Path:
    return cache_root() / check_preset(preset)


def build_model(name: str, preset: str, out: Path, formats=None) -> dict:
    """Build every component of model ``name`` into ``out/<name>``; return its manifest.

    ``formats`` (zoo format names) says which builders run: the one writing the weights, and those declaring one of
    ``formats``; a builder nobody asked for may be missing. None: every builder (``speechperf zoo build``).
    The folder is written under a temporary name and renamed into place, so a half-finished build is never seen.
    """
    check_preset(preset)
    model = get_model(name)
    with atomic_folder(Path(out) / name, f"zoo model {name}") as work:
        return _build_into(model, preset, work, formats)


def builders_for(formats=None) -> list:
    """The builders a build of ``formats`` runs (see ``build_model``), the one writing the weights first."""
    builders = zoo_builders()
    if not builders or not hooks(builders[0]).builds_reference_weights:
        raise SpeechperfError("no registered backend builds the reference weights (builds_reference_weights)")
    if formats is None:
        return builders
    declared = zoo_formats(variants=True)
    for fmt in formats:
        if fmt not in declared:
            raise SpeechperfError(f"unknown zoo format {fmt!r}; known formats: {', '.join(declared)}")
    asked = {declared[fmt][0] for fmt in formats}
    return [builders[0]] + [b for b in builders[1:] if b.name in asked]


def _build_into(model: ReferenceModel, preset: str, folder: Path, formats=None) -> dict:
    builders = builders_for(formats)
    for backend in builders:
        backend.require_available()
    source, ports = builders[0], builders[1:]
    built: SourceBuild = hooks(source).build_reference(model.name, preset, folder)
    port_files = [a for port in ports for a in hooks(port).build_reference(model.name, preset, folder, built.weights)]
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "model": model.name,
        "preset": preset,
        "task": model.task,
        "description": model.description,
        "architecture": attrs.asdict(model.hparams(preset)),
        "parameter_count": built.parameter_count,
        "seed": model.seed,
        "weights": "pretrained" if model.is_pretrained(preset) else "seeded",
        "source_framework": source.name,
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
        "files": [_file_entry(folder, a) for a in (*built.artifacts, *port_files)],
        "definitions": definitions_of(model.name),
        "frameworks": {b.name: b.availability().version for b in builders},
        # What this folder holds: the zoo formats of the builders that ran (is_built asks for some of them).
        "formats": [name for b in builders for name, zf in hooks(b).zoo_formats.items() if not zf.variant],
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_text_atomic(folder / MANIFEST, json.dumps(manifest, indent=2) + "\n", "zoo manifest")
    return manifest


def installed_formats() -> list[str] | None:
    """The zoo formats ``speechperf zoo build`` builds here: None (every one) when every builder's framework is
    installed, else those of the installed ones, with one line per builder left out saying what it needs (a build
    of s2t without paddle writes the torch formats and says that paddle's need ``pip install speechperf[paddle]``).
    The builder of the weights is never left out: without it nothing can be built, and the build says so."""
    builders = zoo_builders()
    missing = [b for b in builders[1:] if not b.availability().ok]
    if not missing:
        return None
    for backend in missing:
        formats = ", ".join(hooks(backend).zoo_formats)
        reason = backend.availability().reason.splitlines()[0]
        log.warning("note: the %s formats (%s) are not built: %s", backend.name, formats, reason)
    kept = [b for b in builders if b not in missing]
    return [name for b in kept for name, zf in hooks(b).zoo_formats.items() if not zf.variant]


def definitions_of(model: str) -> str:
    """The hash of the sources that define ``model`` (speechperf.cache.definition_hash): a built model whose
    sources changed is built again."""
    return cache.definition_hash(definition_module(model), (*MODEL_MODULES, *PRETRAINED_MODELS.values()))


def _tensor(t: TensorInfo) -> dict:
    return {"name": t.name, "dtype": t.dtype, "shape": list(t.shape) if t.shape is not None else None}


def _file_entry(folder: Path, artifact: Artifact) -> dict:
    path = Path(artifact.path)
    return {
        "path": path.relative_to(folder).as_posix(),
        "format": artifact.format,
        "component": artifact.component,
        "bytes": path.stat().st_size,
        "sha256": file_sha256(path),
        "export_seconds": round(artifact.seconds, 3),
    }


def build_all(preset: str, out: Path, models: list[str] | None = None) -> list[dict]:
    return [build_model(name, preset, Path(out)) for name in (models or list(MODEL_MODULES))]


def read_manifest(folder: Path) -> dict:
    """The manifest of a built model folder: a JSON object, or a one-line ModelFileError saying what it is."""
    path = Path(folder) / MANIFEST
    rebuild = "rebuild the folder with: speechperf zoo build --out DIR"
    problem = file_problem(path)  # before the read: a FIFO would block it forever, a device never end
    if problem == "not found":
        raise ModelFileError(f"no {MANIFEST} in {folder}; build it with: speechperf zoo build --out DIR")
    if problem == "is a folder":
        raise ModelFileError(f"{path} is a folder; a model folder's {MANIFEST} is a JSON file ({rebuild})")
    if problem is not None:
        raise ModelFileError(f"{path} {problem}; a model folder's {MANIFEST} is a JSON file ({rebuild})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, not JSON
        raise ModelFileError(f"{path} is not a JSON file ({first_line(exc)}); {rebuild}") from None
    if not isinstance(manifest, dict):
        raise ModelFileError(
            f"{path} holds a JSON {type(manifest).__name__}, not an object (the manifest {MANIFEST} of a built "
            f"model); {rebuild}"
        )
    return manifest


def built_formats(manifest: dict) -> set[str]:
    """The zoo formats a built folder holds (a manifest from before ``formats`` was written holds them all)."""
    if "formats" in manifest:
        return set(manifest["formats"])
    return set(zoo_formats())


def _buildable(formats) -> set[str]:
    """``formats`` less the variants (a variant is written by ``speechperf optimize``, never built)."""
    declared = zoo_formats(variants=True)
    return {fmt for fmt in formats if not (fmt in declared and declared[fmt][1].variant)}


def is_built(folder: Path, formats=None) -> bool:
    """A manifest of this speechperf version and of the catalog's current architecture, whose files all exist,
    holding ``formats`` (None: whatever it holds)."""
    try:
        manifest = read_manifest(folder)
        model = get_model(manifest["model"])
        architecture = attrs.asdict(model.hparams(manifest["preset"]))
    except (SpeechperfError, ValueError, KeyError, TypeError):  # TypeError: a field of another type than written
        return False
    if manifest.get("definitions") != definitions_of(model.name) or manifest.get("schema") != MANIFEST_SCHEMA:
        return False  # the model's definition sources changed since it was built (or it predates the key)
    if json.loads(json.dumps(architecture)) != manifest.get("architecture") or manifest.get("seed") != model.seed:
        return False  # the catalog changed since this was built
    if formats is not None and not _buildable(formats) <= built_formats(manifest):
        return False
    return all((Path(folder) / f["path"]).exists() for f in manifest["files"])


def ensure_built(model: str, preset: str, root: Path | None = None, formats=None) -> Path:
    """The folder of ``model`` built at ``preset`` under ``root`` (default: the cache), building it if needed.

    ``formats``: the zoo formats wanted (None: every one). A folder lacking one is rebuilt with what it held plus
    what is asked, so only the builders of those formats (and the weights') must be installed."""
    get_model(model)
    base = Path(root) if root is not None else cache_dir(preset)
    folder = base / model
    wanted = list(zoo_formats()) if formats is None else formats
    if is_built(folder, wanted):
        return folder
    with build_lock(base, model):  # built meanwhile by another process (two commands, two test workers)?
        if not is_built(folder, wanted):
            if formats is not None and is_built(folder):
                formats = built_formats(read_manifest(folder)) | set(formats)
            build_model(model, preset, base, None if formats is None else sorted(_buildable(formats)))
    return folder


#: The child that builds one reference model: argv = model, preset, formats (comma-separated; empty: all).
BUILD_CHILD = (
    "import sys; from speechperf.zoo.build import ensure_built; "
    "ensure_built(sys.argv[1], sys.argv[2], formats=[f for f in sys.argv[3].split(',') if f] or None)"
)


def ensure_built_in_child(model: str, preset: str, formats: tuple[str, ...] = ()) -> None:
    """``ensure_built`` in the cache, in a child process, where ``model`` is not built yet with ``formats`` (empty:
    whatever it holds): the exporters import both frameworks and print pages of progress, none of which should sit
    in the process that asks. The child's output goes to a log file; a failure is one line naming the file and the
    child's last line (its error)."""
    base = cache_dir(preset)  # the model's folder and its build log
    if is_built(base / model, formats or None):
        return
    log.info("building reference model %s/%s into %s (once) ...", model, preset, base)
    start = time.perf_counter()
    base.mkdir(parents=True, exist_ok=True)
    log_path = check_output_path(base / f"{model}.build.log", "build log")
    with open(log_path, "w") as out:
        done = subprocess.run(
            [sys.executable, "-c", BUILD_CHILD, model, preset, ",".join(formats)], stdout=out, stderr=subprocess.STDOUT
        )
    if done.returncode != 0:
        lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
        last = lines[-1] if lines else "no output"
        raise SpeechperfError(
            f"building reference model {model}/{preset} failed (exit {done.returncode}): {last[:300]}; "
            f"full log: {log_path}"
        )
    log.info("built %s/%s in %.1f s", model, preset, time.perf_counter() - start)


@contextlib.contextmanager
def build_lock(base: Path, model: str):
    """Hold ``base/.<model>.lock`` while building: two processes asking for one model at once (a compare's
    children, parallel test workers) build it once: the second finds it built when the first lets go."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f".{model}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def model_spec(folder: Path, component: str, fmt: str) -> ModelSpec:
    """The ModelSpec of one component of a built model in zoo format ``fmt`` (see ``zoo_formats``)."""
    _, zf = _zoo_format(fmt)
    folder = Path(folder)
    manifest = read_manifest(folder)
    model = get_model(manifest["model"])
    comp = model.component(component)
    if zf.path is None:
        return ModelSpec(
            format=zf.format,
            factory=zf.factory,
            factory_kwargs={
                "model": model.name,
                "preset": manifest["preset"],
                "component": component,
                "weights": str(folder / "weights.safetensors"),
                # a pruned model's sizes that differ from the preset's (speechperf.zoo.pruned)
                **({"architecture": arch} if (arch := manifest.get("pruning", {}).get("architecture")) else {}),
            },
            inputs=comp.inputs,
            outputs=comp.outputs,
        )
    # A quantized variant's manifest says how its files load (e.g. paddle's oneDNN int8 predictor).
    options = manifest.get("load_options", {}).get(fmt, {})
    return ModelSpec(
        path=folder / zf.path.format(component=component),
        format=zf.format,
        inputs=comp.inputs,
        outputs=comp.outputs,
        options=options,
    )


def load_session(folder: Path, component: str, fmt: str, threads: int | None = None, device: str = "cpu", backend=None):
    """A session over one component of a built model in one format, on ``backend`` (default: ``backend_for``)."""
    spec = model_spec(folder, component, fmt)
    backend = backend if backend is not None else backend_for(fmt)
    session = backend.load(spec, device=device, threads=threads)
    # ORT reads shapes from the graph (symbolic names differ per exporter); declare the catalog's instead, so every
    # format checks feeds the same way and names the same axes in its errors.
    session.inputs = spec.inputs
    return session
