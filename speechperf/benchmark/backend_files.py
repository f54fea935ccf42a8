"""Which model file a stage runs on a backend: its one ``path``, its backend's entry of a file per backend
(``path: {torch: enc.pt, paddle: enc.json, onnxruntime: enc.onnx}``), or an ONNX file derived from the torch or
paddle file by the framework's own exporter (``derive: onnx``, speechperf.benchmark.derive).

bench resolves its config for the backend it runs before anything is checked or loaded; compare resolves it for
every backend it is asked for, so a backend without a file is one line before any child runs.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from speechperf.config.schema import BenchConfig, StageConfig
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

    return getattr(get_backend(backend_name), "onnx_exporter", None)


def onnx_runner() -> str | None:
    """The backend that runs a derived ``.onnx`` file: the one that loads that suffix as format onnx."""
    return next((b.name for b in _backends() if getattr(b, "suffix_formats", {}).get(".onnx") == "onnx"), None)


def source_suffixes() -> dict[str, str]:
    """Suffix -> backend, for the files a backend's ONNX exporter reads (TorchScript, paddle programs)."""
    return {
        suffix: b.name
        for b in _backends()
        if getattr(b, "onnx_exporter", None)
        for suffix, fmt in getattr(b, "suffix_formats", {}).items()
        if fmt in getattr(b, "onnx_export_formats", ())
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
    if backend_name in stage.path:
        return stage.path[backend_name]
    if derives_for(stage, backend_name):
        return derive_source(stage)[1]
    derive = ", or `derive: onnx`" if backend_name == onnx_runner() and not stage.derive else ""
    raise ModelFileError(
        f"{where}: path has no file for backend {backend_name!r}; it has {', '.join(stage.path)} (add "
        f"`{backend_name}: FILE` to path{derive})"
    )


def config_for_backend(cfg: BenchConfig, backend_name: str, workdir: Path | None = None, log=None) -> BenchConfig:
    """``cfg`` with each ``path`` stage pointing at the one file ``backend_name`` runs. With ``workdir``, a derived
    file is made (or taken from the cache) and gated on parity; without, a stage that derives keeps its source
    file, as ``config check`` needs (nothing is exported to check a config)."""
    stages = []
    for index, stage in enumerate(cfg.stages, 1):
        if not stage.path:
            stages.append(stage)
            continue
        where = f"{cfg.source}: stage{index}"
        if workdir is not None and derives_for(stage, backend_name):
            from speechperf.benchmark.derive import derived_file

            stages.append(attrs.evolve(stage, path=str(derived_file(cfg, index, log)), format="onnx"))
            continue
        file = stage_file(stage, backend_name, where)
        stages.append(attrs.evolve(stage, path=file, format=stage.format if isinstance(stage.path, str) else None))
    return attrs.evolve(cfg, stages=tuple(stages))


def files_by_backend(stage: StageConfig) -> dict[str | None, str]:
    """Every file a ``path`` stage names: backend -> file (None for a single path, which every backend runs)."""
    if isinstance(stage.path, str):
        return {None: stage.path}
    return dict(stage.path)
