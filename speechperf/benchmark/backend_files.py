"""Which model file a stage runs on a backend: its one ``path``, its backend's entry of a file per backend
(``path: {torch: enc.pt, paddle: enc.json, onnxruntime: enc.onnx}``), or an ONNX file derived from the torch or
paddle file by the framework's own exporter (``derive: onnx``, speechperf.benchmark.derive).

bench resolves its config for the backend it runs before anything is checked or loaded
(speechperf.benchmark.derive.config_for_backend, which makes a derived file too); compare resolves it for every
backend it is asked for, so a backend without a file is one line before any child runs.
"""

from __future__ import annotations

from pathlib import Path

from speechperf.backend.hooks import hooks
from speechperf.backend.spec import ModelSpec
from speechperf.config.schema import StageConfig
from speechperf.errors import ModelFileError, SpeechperfError


def _backends():
    from speechperf.registry import get_backend, known_backends

    for name in known_backends():
        try:
            yield get_backend(name)  # registered, not imported
        except SpeechperfError:  # a broken plugin exports nothing
            continue


def exporter_of(backend_name: str) -> tuple[str, str] | None:
    """(exporter, its distribution) of a backend that can export its files to ONNX, e.g. torch.onnx.export."""
    from speechperf.registry import get_backend

    return hooks(get_backend(backend_name)).onnx_exporter


def onnx_runner() -> str | None:
    """The backend that runs a derived ``.onnx`` file: the one that loads that suffix as format onnx."""
    return next((b.name for b in _backends() if hooks(b).suffix_formats.get(".onnx") == "onnx"), None)


def source_suffixes() -> dict[str, str]:
    """Suffix -> backend, for the files a backend's ONNX exporter reads (TorchScript, paddle programs)."""
    return {
        suffix: b.name
        for b in _backends()
        if hooks(b).onnx_exporter
        for suffix, fmt in hooks(b).suffix_formats.items()
        if fmt in hooks(b).onnx_export_formats
    }


def derive_source(stage: StageConfig) -> tuple[str, str] | None:
    """(backend, file) the ``derive`` exporter reads: the first file of the stage whose backend has an ONNX
    exporter (a single ``path``: by its suffix)."""
    if not stage.derive or not stage.path:
        return None
    if isinstance(stage.path, str):
        kind = source_suffixes().get(Path(stage.path).suffix)
        return (kind, stage.path) if kind else None
    for backend, file in stage.path.items():
        if exporter_of(backend) and Path(file).suffix in source_suffixes():
            return backend, file
    return None


def require_derive_source(stage: StageConfig) -> tuple[str, str]:
    """``derive_source`` of a stage that derives (``derives_for`` said so, or config check refused it before)."""
    found = derive_source(stage)
    if found is None:
        raise ModelFileError(f"derive: {stage.derive}: no file of {stage.path} is one a backend's ONNX exporter reads")
    return found


def require_exporter(backend_name: str) -> tuple[str, str]:
    """``exporter_of`` a backend that ``derive_source`` picked (so it has one)."""
    found = exporter_of(backend_name)
    if found is None:
        raise ModelFileError(f"backend {backend_name!r} has no ONNX exporter (its onnx_exporter hook is None)")
    return found


def derives_for(stage: StageConfig, backend_name: str) -> bool:
    """Whether this backend runs the derived file: ``derive`` is set, the backend is the exporter's target and the
    config gives it no file of its own."""
    if not stage.derive or onnx_runner() != backend_name:
        return False
    return derive_source(stage) is not None and not (isinstance(stage.path, dict) and backend_name in stage.path)


def stage_file(stage: StageConfig, backend_name: str, where: str) -> str:
    """The file ``backend_name`` runs for a ``path`` stage (the source file when it is derived); one line naming
    the stage and the files it has when the backend has none."""
    if isinstance(stage.path, str):
        return stage.path
    if stage.path is None:
        raise ModelFileError(f"{where}: the stage has no path")
    if backend_name in stage.path:
        return stage.path[backend_name]
    if derives_for(stage, backend_name):
        return require_derive_source(stage)[1]
    derive = ", or `derive: onnx`" if backend_name == onnx_runner() and not stage.derive else ""
    raise ModelFileError(
        f"{where}: path has no file for backend {backend_name!r}; it has {', '.join(stage.path)} (add "
        f"`{backend_name}: FILE` to path{derive})"
    )


def files_by_backend(stage: StageConfig) -> dict[str | None, str]:
    """Every file a ``path`` stage names: backend -> file (None for a single path, which every backend runs)."""
    if isinstance(stage.path, str):
        return {None: stage.path}
    return dict(stage.path or {})


def files_of(spec: ModelSpec) -> list[Path]:
    """The files a spec loads: the model file (plus a paddle program's ``.pdiparams``), or a factory's weights."""
    if spec.path is None:
        weights = spec.weights or spec.factory_kwargs.get("weights")
        return [Path(weights)] if weights is not None else []
    files = [spec.path]
    if spec.path.suffix in (".json", ".pdmodel"):
        files.append(spec.path.with_suffix(".pdiparams"))
    return files
