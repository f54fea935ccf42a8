"""Every check of a benchmark config that can be made before anything is loaded or measured.

``speechperf bench``, ``speechperf profile --config`` and ``speechperf config check`` all call ``check_config``, so
``config check`` says ok to exactly the configs bench would start measuring (up to what only loading can tell: a
model file that the framework cannot parse, a dataset line whose audio is corrupt). No framework is imported.
"""

from __future__ import annotations

from pathlib import Path

from speechperf.backend import ModelSpec, hooks
from speechperf.benchmark.stage import StageError
from speechperf.config.schema import BenchConfig, StageConfig
from speechperf.errors import ModelFileError, SpeechperfError

SILERO = "silero_vad"


def check_config(cfg: BenchConfig, backend_name: str | None = None) -> None:
    """Raise a one-line SpeechperfError for the first thing in ``cfg`` bench would refuse; ``backend_name`` (or
    general.backend) adds the backend's own checks (known name, device, model formats it loads)."""
    from speechperf.data import check_dataset_config
    from speechperf.registry import get_backend

    backend_name = backend_name or cfg.general.backend
    backend = get_backend(backend_name) if backend_name else None  # registered, not imported
    if backend is not None:
        hooks(backend).check_device(cfg.general.device)
    check_dataset_config(cfg.general)
    for index, (stage, role) in enumerate(zip(cfg.stages, cfg.roles), 1):
        where = f"{cfg.source}: stage{index}"
        check_stage_model(stage, role, where)
        if stage.path:
            for file, fmt, loader in _files_to_check(stage, backend, where):
                _check_model_file(file, fmt, where, loader)
        elif stage.model is not None and stage.model != SILERO:  # the config holds exactly one of model and path
            try:
                _check_reference(stage, stage.model, role)
            except SpeechperfError as exc:
                raise type(exc)(f"{where}: {exc}") from None


def check_stage_model(stage: StageConfig, role: str, where: str) -> None:
    """The stage's model fits its role: the real silero VAD only as a VAD, no reference model where none exists."""
    if stage.path:
        return
    if stage.model == SILERO and role != "vad":
        raise StageError(f"{where}: model {SILERO!r} is a VAD; this stage is the {role} model")
    if role == "s2s":
        raise StageError(
            f"{where}: there is no reference direct speech-to-speech model; give your own file as "
            "`path` (or use model_type S2UT: s2ut + unit_vocoder)"
        )
    if role == "vad" and stage.model != SILERO:
        raise StageError(
            f"{where}: the VAD stage takes model {SILERO!r} or your own file (path); got model {stage.model!r}"
        )


def _check_reference(stage: StageConfig, model: str, role: str) -> None:
    from speechperf.zoo.catalog import check_preset, get_model

    get_model(model)  # an unknown name fails with the known names
    check_preset(stage.preset)
    if role == "tts" and stage.vocoder:
        get_model(stage.vocoder)


def _files_to_check(stage: StageConfig, backend, where: str) -> list[tuple[str, str | None, object]]:
    """(file, format, backend that loads it) for each file of a ``path`` stage that a run could load: with a
    backend, the one it runs (a derived file's source, checked on the backend that exports it); without, every
    file of the stage, each on its own backend."""
    from speechperf.benchmark.backend_files import (
        derive_source,
        derives_for,
        files_by_backend,
        require_derive_source,
        stage_file,
    )
    from speechperf.registry import get_backend

    single = isinstance(stage.path, str)
    if stage.derive and derive_source(stage) is None:
        from speechperf.benchmark.backend_files import source_suffixes

        raise ModelFileError(
            f"{where}: derive: {stage.derive} exports from a file that a backend's ONNX exporter reads (suffixes "
            f"{', '.join(f'{k} = {v}' for k, v in source_suffixes().items())}); path is {stage.path}"
        )
    if backend is not None:
        if derives_for(stage, backend.name):
            source_backend, file = require_derive_source(stage)
            return [(file, stage.format if single else None, get_backend(source_backend))]
        return [(stage_file(stage, backend.name, where), stage.format if single else None, backend)]
    return [
        (file, stage.format if single else None, get_backend(name) if name else None)
        for name, file in files_by_backend(stage).items()
    ]


def _check_model_file(file: str, fmt: str | None, where: str, backend) -> None:
    path = Path(file)
    if not path.exists():
        raise ModelFileError(f"{where}: model file not found: {path}")
    if backend is not None:
        suffixes = dict(hooks(backend).suffix_formats)
        if fmt is None and path.suffix not in suffixes:
            raise ModelFileError(
                f"{where}: cannot tell the format of {path} from its suffix {path.suffix!r}; backend "
                f"{backend.name!r} loads: {', '.join(backend.capabilities.formats)} (suffixes "
                f"{', '.join(f'{k} = {v}' for k, v in suffixes.items())}): set the stage's `format:` if the file "
                "is one of them"
            )
        hooks(backend).check_format(ModelSpec(path), fmt or suffixes.get(path.suffix))
        return
    known_suffixes, formats = _known_formats()
    if fmt is None and path.suffix not in known_suffixes:
        raise ModelFileError(
            f"{where}: cannot tell the format of {path} from its suffix {path.suffix!r}; known "
            f"suffixes: {', '.join(sorted(known_suffixes))} (or set the stage's `format:`)"
        )
    if fmt is not None and fmt not in formats:
        raise ModelFileError(
            f"{where}: format {fmt!r} is not loaded by any backend; known formats: {', '.join(sorted(formats))}"
        )


def _known_formats() -> tuple[set[str], set[str]]:
    """The file suffixes and formats some registered backend loads (a broken plugin adds none)."""
    from speechperf.registry import get_backend, known_backends

    suffixes, formats = set(), set()
    for name in known_backends():
        try:
            backend = get_backend(name)
        except SpeechperfError:
            continue
        suffixes |= set(hooks(backend).suffix_formats)
        formats |= set(backend.capabilities.formats)
    return suffixes, formats
