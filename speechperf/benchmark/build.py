"""Build the stages of a config on one backend: load each stage's model and wrap it in its task driver.

``prepare_stages`` runs first, before any memory is measured: it has missing reference models built in a child
process (``speechperf.zoo.build.ensure_built_in_child``: building imports both torch and paddle and exports every
format; none of that should sit in the measured process) and writes the exported silero weights the paddle VAD port
reads.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

from speechperf.backend import ModelSpec, TensorInfo, hooks
from speechperf.benchmark.reference import backend_options
from speechperf.benchmark.stage import Stage
from speechperf.benchmark.validate import SILERO, check_stage_model
from speechperf.config.schema import BenchConfig, StageConfig


def reference_models(cfg: BenchConfig, backend=None) -> list[tuple[str, str, tuple[str, ...]]]:
    """(model, preset, zoo formats) of every reference model the stages of ``cfg`` load on ``backend``, vocoders
    included: the format each stage runs, and the one its FLOPs are counted on (``counted_as``). Without a
    backend the formats are empty (every format)."""
    from speechperf.benchmark.reference import DEFAULT_VOCODER, END_TO_END_TTS, zoo_format, zoo_format_of
    from speechperf.registry import get_backend
    from speechperf.zoo.build import runnable_formats

    needed: dict[tuple[str, str], list[str]] = {}
    run_backend = backend
    for index, (stage_cfg, role) in enumerate(zip(cfg.stages, cfg.roles), 1):
        if stage_cfg.path or stage_cfg.model_dir or stage_cfg.model in (None, SILERO):
            continue
        formats = []
        backend = get_backend(stage_cfg.backend) if stage_cfg.backend and run_backend is not None else run_backend
        if backend is not None:
            where = f"stage{index}"
            formats.append(zoo_format(backend, stage_cfg.format, where))
            counted_as = zoo_format_of(backend, stage_cfg.format, where).counted_as
            if counted_as is not None and counted_as in runnable_formats(backend):
                formats.append(counted_as)
        vocoder = role == "tts" and stage_cfg.model not in END_TO_END_TTS
        models = [stage_cfg.model] + ([stage_cfg.vocoder or DEFAULT_VOCODER] if vocoder else [])
        for model in models:
            needed.setdefault((model, stage_cfg.preset), []).extend(formats)
    return [(model, preset, tuple(dict.fromkeys(fmts))) for (model, preset), fmts in needed.items()]


def prepare_stages(cfg: BenchConfig, backend_name: str, workdir: Path) -> None:
    """Make every file the stages will load exist, without loading anything into this process's frameworks."""
    from speechperf.registry import get_backend
    from speechperf.zoo.build import ensure_built_in_child
    from speechperf.zoo.catalog import check_preset, get_model

    backend = get_backend(backend_name)  # the class only: its framework is not imported
    for model, preset, formats in reference_models(cfg, backend):
        check_preset(preset)
        get_model(model).hparams(preset)  # an unknown name or a size the model lacks fails here, in one line
        ensure_built_in_child(model, preset, formats)
    for stage_cfg in cfg.stages:
        if stage_cfg.model == SILERO:
            from speechperf.adapters.vad import silero_model_spec

            workdir.mkdir(parents=True, exist_ok=True)
            # Writes whatever the backend's silero files need written once (a port's weights, exported from the
            # TorchScript file), before any memory is measured.
            silero_model_spec(get_backend(stage_cfg.runs_on(backend_name)), workdir)


@contextlib.contextmanager
def stdout_to_stderr():
    """Send what frameworks print on file descriptor 1 to stderr: stdout carries only the result table."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout: nothing to protect
        yield
        return
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def build_stages(cfg: BenchConfig, backend, device: str, threads: int, workdir: Path) -> list[Stage]:
    """Every stage loaded on ``backend``, or on the backend it is pinned to (``stageN.backend``), which is set to
    ``threads`` and seeded as ``backend`` is, so a hybrid run keeps the thread count and seed on every framework."""
    return [open_stage(cfg, index, backend, device, threads, workdir) for index in range(1, len(cfg.stages) + 1)]


def open_stage(cfg: BenchConfig, index: int, backend, device: str, threads: int, workdir: Path) -> Stage:
    """Stage ``index`` (1-based) loaded on ``backend`` or the backend it is pinned to (set to ``threads`` and seeded
    as ``backend`` is)."""
    from speechperf.registry import require_backend

    stage_cfg, role = cfg.stages[index - 1], cfg.roles[index - 1]
    start = time.perf_counter()
    on = backend
    if stage_cfg.backend and stage_cfg.backend != backend.name:
        on = require_backend(stage_cfg.backend)
        on.set_threads(threads)
        on.seed(cfg.general.seed)
    stage = build_stage(stage_cfg, role, index, cfg, on, device, threads, workdir)
    stage.load_seconds = time.perf_counter() - start
    stage.backend = on
    return stage


def build_stage(
    stage_cfg: StageConfig, role: str, index: int, cfg: BenchConfig, backend, device: str, threads: int, workdir: Path
) -> Stage:
    where = f"{cfg.source}: stage{index}"
    if stage_cfg.model == "hf":  # a Hugging Face folder (speechperf.benchmark.hf_stage)
        from speechperf.benchmark.hf_stage import hf_stage

        return hf_stage(stage_cfg, role, where, backend, device, threads)
    if stage_cfg.path:
        from speechperf.benchmark.file_stage import FileStage, feature_maker

        spec = ModelSpec(
            path=stage_cfg.path,
            format=stage_cfg.format,
            entry=stage_cfg.entry,
            inputs=tuple(TensorInfo(i.name, i.dtype) for i in stage_cfg.inputs),
            outputs=tuple(TensorInfo(n) for n in stage_cfg.outputs),
            options=backend_options(stage_cfg, backend),
        )
        session = _load_file(backend, spec, device, threads, where, f"stage{index}")
        makes_features = any((i.source or "").startswith("feature") for i in stage_cfg.inputs)
        feature_fn = feature_maker(stage_cfg.features) if makes_features else None
        # A feature dataset (.npz / .npy) brings features of its own size; audio gets the stage's bins.
        channels = None if cfg.general.dataset_type in ("npz", "npy") else stage_cfg.features.bins
        return FileStage(role, session, stage_cfg, cfg.general.sample_rate, feature_fn, where, channels)
    check_stage_model(stage_cfg, role, where)
    if stage_cfg.model == SILERO:
        from speechperf.adapters.vad import silero_model_spec
        from speechperf.benchmark.file_stage import VadStage

        workdir.mkdir(parents=True, exist_ok=True)
        spec = attrs.evolve(silero_model_spec(backend, workdir), options=backend_options(stage_cfg, backend))
        if stage_cfg.model_dir and spec.path is not None:  # e.g. a quantized silero written by `speechperf optimize`
            spec = attrs.evolve(spec, path=Path(stage_cfg.model_dir) / spec.path.name)
        session = backend.load(spec, device=device, threads=threads)
        return VadStage(session, stage_cfg.vad_threshold)
    from speechperf.benchmark.reference import reference_stage

    return reference_stage(stage_cfg, role, where, backend, device, threads)


def _load_file(backend, spec: ModelSpec, device: str, threads: int, where: str, section: str):
    """Load a user's file; when its format was guessed from the suffix and loading fails, say so and name the key
    that sets it (a ``.pt`` may be a TorchScript archive or a pickled checkpoint)."""
    from speechperf.errors import DeclarationError, ModelFileError

    try:
        return backend.load(spec, device=device, threads=threads)
    except DeclarationError as exc:  # the file loaded: its format was right
        raise DeclarationError(f"{where}: {exc}") from None
    except ModelFileError as exc:
        path = spec.path  # a user's file always has one
        guessed = None if spec.format or path is None else dict(hooks(backend).suffix_formats).get(path.suffix)
        if guessed is None or path is None or not path.exists():
            raise
        raise ModelFileError(
            f"{where}: {exc} (format {guessed!r} was guessed from the suffix {path.suffix!r}; if the file is another "
            f"format, set {section}.format: one of {', '.join(backend.capabilities.formats)})"
        ) from None


def open_stages(
    cfg: BenchConfig,
    backend,
    workdir: Path,
    threads: int | None = None,
    instances: int = 1,
    also: Iterable = (),
    before_load: Callable[[], None] | None = None,
) -> list[list[Stage]]:
    """A config's stages opened on ``backend`` the one way every command opens them (bench, optimize, loadgen,
    profile): missing reference models built (in a child), ``backend`` and the frameworks in ``also`` (the stages
    pinned elsewhere) set to the run's threads and seed, ``before_load()`` called (bench reads the RSS there: the
    framework imported, no model loaded), then each stage's sessions loaded, ``instances`` independent copies.
    ``threads``: default the config's. Anything a framework prints goes to stderr, so stdout stays the data's."""
    general = cfg.general
    threads = general.threads if threads is None else threads
    with stdout_to_stderr():
        prepare_stages(cfg, backend.name, workdir)
        for each in (backend, *also):  # every framework a stage runs on: the same threads, the same seed
            each.set_threads(threads)
            each.seed(general.seed)
        if before_load is not None:
            before_load()
        return [build_stages(cfg, backend, general.device, threads, workdir) for _ in range(instances)]


def open_stage_pools(cfg: BenchConfig, backend, workdir: Path, serving) -> list[list[Stage]]:
    """loadgen's ``general.serving: stages``: stage N's pool, ``serving[N].instances`` copies each loaded at
    ``serving[N].threads`` (speechperf.loadgen.stages), opened as ``open_stages`` opens a chain."""
    general = cfg.general
    with stdout_to_stderr():
        prepare_stages(cfg, backend.name, workdir)
        backend.seed(general.seed)
        pools = []
        for index, how in enumerate(serving, 1):
            backend.set_threads(how.threads)
            pools.append(
                [open_stage(cfg, index, backend, general.device, how.threads, workdir) for _ in range(how.instances)]
            )
        return pools
