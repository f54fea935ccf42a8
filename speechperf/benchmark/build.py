"""Build the stages of a config on one backend: load each stage's model and wrap it in its task driver.

``prepare_stages`` runs first, before any memory is measured: it builds missing reference models in a child
process (building imports both torch and paddle and exports every format; none of that should sit in the measured
process) and writes the exported silero weights the paddle VAD port reads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import attrs

from speechperf.backend import ModelSpec, TensorInfo, hooks
from speechperf.benchmark.reference import backend_options
from speechperf.benchmark.stage import Stage, StageError
from speechperf.benchmark.validate import SILERO, check_stage_model
from speechperf.config.schema import BenchConfig, StageConfig

log = logging.getLogger(__name__)


def reference_models(cfg: BenchConfig) -> list[tuple[str, str]]:
    """(model, preset) of every reference model the stages of ``cfg`` load, vocoders included."""
    needed = []
    for stage_cfg, role in zip(cfg.stages, cfg.roles):
        if stage_cfg.path or stage_cfg.model_dir or stage_cfg.model in (None, SILERO):
            continue
        needed.append((stage_cfg.model, stage_cfg.preset))
        if role == "tts":
            from speechperf.benchmark.reference import DEFAULT_VOCODER

            needed.append((stage_cfg.vocoder or DEFAULT_VOCODER, stage_cfg.preset))
    return list(dict.fromkeys(needed))


def prepare_stages(cfg: BenchConfig, backend_name: str, workdir: Path) -> None:
    """Make every file the stages will load exist, without loading anything into this process's frameworks."""
    from speechperf.zoo.build import cache_dir, is_built
    from speechperf.zoo.catalog import check_preset, get_model

    for model, preset in reference_models(cfg):
        check_preset(preset)
        get_model(model).hparams(preset)  # an unknown name or a size the model lacks fails here, in one line
        if is_built(cache_dir(preset) / model):
            continue
        log.info("building reference model %s/%s into %s (once) ...", model, preset, cache_dir(preset))
        start = time.perf_counter()
        code = "import sys; from speechperf.zoo.build import ensure_built; ensure_built(sys.argv[1], sys.argv[2])"
        # The exporters print pages of progress; keep them, and show them only when the build fails.
        done = subprocess.run(
            [sys.executable, "-c", code, model, preset], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        if done.returncode != 0:
            log.error("%s", "\n".join(done.stdout.splitlines()[-40:]))
            raise StageError(
                f"building reference model {model}/{preset} failed (exit {done.returncode}); "
                "its last messages are above"
            )
        log.info("built %s/%s in %.1f s", model, preset, time.perf_counter() - start)
    if any(s.model == SILERO for s in cfg.stages):
        from speechperf.adapters.vad import silero_model_spec
        from speechperf.registry import get_backend

        workdir.mkdir(parents=True, exist_ok=True)
        # Writes whatever the backend's silero files need written once (a port's weights, exported from the TorchScript
        # file), before any memory is measured.
        silero_model_spec(get_backend(backend_name), workdir)


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
    stages = []
    for index, (stage_cfg, role) in enumerate(zip(cfg.stages, cfg.roles), 1):
        start = time.perf_counter()
        stage = build_stage(stage_cfg, role, index, cfg, backend, device, threads, workdir)
        stage.load_seconds = time.perf_counter() - start
        stages.append(stage)
    return stages


def build_stage(
    stage_cfg: StageConfig, role: str, index: int, cfg: BenchConfig, backend, device: str, threads: int, workdir: Path
) -> Stage:
    where = f"{cfg.source}: stage{index}"
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
        # A feature dataset (.npz / .npy) brings features of its own size; audio gets the stage's n_mels.
        channels = None if cfg.general.dataset_type in ("npz", "npy") else stage_cfg.features.n_mels
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
    from speechperf.errors import ModelFileError

    try:
        return backend.load(spec, device=device, threads=threads)
    except ModelFileError as exc:
        path = spec.path  # a user's file always has one
        guessed = None if spec.format or path is None else dict(hooks(backend).suffix_formats).get(path.suffix)
        if guessed is None or path is None or not path.exists():
            raise
        raise ModelFileError(
            f"{where}: {exc} (format {guessed!r} was guessed from the suffix {path.suffix!r}; if the file is another "
            f"format, set {section}.format: one of {', '.join(backend.capabilities.formats)})"
        ) from None
