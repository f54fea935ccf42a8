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
from speechperf.errors import ModelFileError

#: Suffixes of the files each exporter reads, for a single ``path`` with ``derive``.
SOURCE_SUFFIXES = {
    ".pt": "torch",
    ".ts": "torch",
    ".jit": "torch",
    ".pt2": "torch",
    ".json": "paddle",
    ".pdmodel": "paddle",
}
DERIVED_BACKEND = {"onnx": "onnxruntime"}


def derive_source(stage: StageConfig) -> tuple[str, str] | None:
    """(backend, file) the ``derive`` exporter reads: the torch file if there is one, else the paddle file."""
    if not stage.derive or not stage.path:
        return None
    if isinstance(stage.path, str):
        kind = SOURCE_SUFFIXES.get(Path(stage.path).suffix)
        return (kind, stage.path) if kind else None
    for backend in ("torch", "paddle"):
        if backend in stage.path:
            return backend, stage.path[backend]
    return None


def derives_for(stage: StageConfig, backend_name: str) -> bool:
    """Whether this backend runs the derived file: ``derive`` is set, the backend is the exporter's target and the
    config gives it no file of its own."""
    if not stage.derive or DERIVED_BACKEND[stage.derive] != backend_name:
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
    derive = ", or `derive: onnx`" if backend_name == "onnxruntime" and not stage.derive else ""
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
