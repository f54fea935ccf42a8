"""``speechperf profile`` as one call: a model file on seeded random inputs, or a config's stages built and fed as
``bench`` builds and feeds them (``plan.resolve``, quality off), profiled step after step by the backend's step
profiler (``speechperf.profiler.workload``), and its summary shown, written and kept through the command lifecycle
as a ``profile`` document (docs/profiler.md).

It lives in ``benchmark`` because it builds a benchmark's stages; the profiler below it knows nothing of them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import attrs

from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError
from speechperf.exports import Exports
from speechperf.lifecycle import lifecycle
from speechperf.profiler import ProfilerOptions, workload
from speechperf.profiler.workload import ProfileStage, parse_input_spec, random_feeds
from speechperf.results.environment import machine

log = logging.getLogger(__name__)


@attrs.frozen
class ModelFile:
    """``--model``: one model file called on seeded random inputs (``input_specs``: ``NAME:SHAPE[:DTYPE]``)."""

    path: Path
    backend: str
    input_specs: tuple[str, ...] = ()
    fmt: str | None = None
    device: str = "cpu"
    threads: int = 1
    seed: int = 0


@attrs.frozen
class ProfileOptions:
    """What to profile (a ``ModelFile`` or a config, its backend, device, threads and seed set in it), how
    (``profiler``, parsed), and where the summary goes."""

    target: ModelFile | BenchConfig
    profiler: ProfilerOptions
    exports: Exports = Exports()


def check_trace_path(options: ProfilerOptions) -> None:
    """Refuse a trace path that cannot be written before profiling, not after it (a folder takes the trace)."""
    from speechperf.profiler.base import trace_path_of

    if not options.timer_only:
        trace_path_of(options.profile_path, "trace.json")


def run_profile(options: ProfileOptions) -> int:
    """Profile, then show the op table, the step by category, the timing and the trace's path; returns 0."""
    check_trace_path(options.profiler)
    with lifecycle(options.exports) as run:
        if isinstance(options.target, ModelFile):
            backend, stages, profiled = _model_stages(options.target, options.profiler)
        else:
            backend, stages, profiled = _config_stages(options.target, options.profiler)
        summary = workload.profile_stages(  # through the module: a test may wrap it
            backend, stages, options.profiler, _roof(backend, options.profiler), echo=False
        )
        if summary is None:  # the loop always reaches the range's end; a backend that never finished is a bug
            raise SpeechperfError(f"the {backend.name} step profiler gave no summary")
        doc = summary.to_document(profiled=profiled)
        doc.config = None if isinstance(options.target, ModelFile) else options.target.to_dict()
        doc.environment = {**machine(), "backend": backend.name, "threads": profiled["threads"]}
        return run.finish(doc, 0)


def _model_stages(target: ModelFile, profiler: ProfilerOptions) -> tuple[Any, list[ProfileStage], dict[str, Any]]:
    from speechperf.backend import ModelSpec
    from speechperf.backend.session import check_feeds
    from speechperf.registry import require_backend

    given = {}
    for text in target.input_specs:
        name, shape, dtype = parse_input_spec(text)
        given[name] = (shape, dtype)
    backend = require_backend(target.backend)
    session = backend.load(ModelSpec(target.path, format=target.fmt), device=target.device, threads=target.threads)
    feeds = random_feeds(session.inputs, given, target.seed)
    check_feeds(session.inputs, feeds)  # a feed the model refuses is one line before any progress line
    log.info("profiling %s on %s: %r", target.path, target.backend, profiler)
    stage = ProfileStage.of_session(target.path.name, session, feeds)
    shapes = {name: list(array.shape) for name, array in feeds.items()}
    what = {"model": str(target.path), "inputs": shapes, "threads": target.threads, "device": target.device}
    return backend, [stage], what


def _config_stages(cfg: BenchConfig, profiler: ProfilerOptions) -> tuple[Any, list[ProfileStage], dict[str, Any]]:
    """The config's stages and inputs as ``bench`` makes them; one sample per step, every stage in turn."""
    from speechperf.benchmark import build, plan
    from speechperf.benchmark.core import benchmark_for
    from speechperf.cache import cache_dir

    workdir = cache_dir()
    resolved = plan.resolve(cfg, workdir=workdir, quality="off")
    if resolved.size_note:
        log.info("note: %s", resolved.size_note)
    cfg, backend, general = resolved.cfg, resolved.backend, resolved.cfg.general
    (stages,) = build.open_stages(cfg, backend, workdir)
    with build.stdout_to_stderr():
        pipeline = benchmark_for(
            general.model_type, stages, backend, device=general.device, threads=general.threads, meters=()
        )
        pipeline.generate_stage_inputs(resolved.dataset)  # untimed, before the profiler starts, as bench does
    for message in pipeline.failed.values():
        log.info("note: left out of the profile: %s", message)
    sids = [sid for sid in pipeline.inputs[-1] if sid not in pipeline.failed]
    if not sids:
        raise SpeechperfError(
            f"{cfg.source}: no sample could be prepared for profiling; first failure: "
            f"{next(iter(pipeline.failed.values()), 'the dataset is empty')}"
        )
    profiled = [
        ProfileStage.of_stage(stage, [pipeline.inputs[i][sid] for sid in sids]) for i, stage in enumerate(stages)
    ]
    chain = " -> ".join(f"stage{i} {s.label}" for i, s in enumerate(stages, 1))
    log.info(
        "profiling %s (%s) on %s, %d thread(s): one step = one sample through %s, cycling over %d sample(s); %r",
        cfg.source,
        general.model_type,
        backend.name,
        general.threads,
        chain,
        len(sids),
        profiler,
    )
    what = {
        "config": str(cfg.source),
        "model_type": general.model_type,
        "stages": [f"stage{i} {s.label}" for i, s in enumerate(stages, 1)],
        "samples": len(sids),
        "threads": general.threads,
        "device": general.device,
    }
    return backend, profiled, what


def _roof(backend, options: ProfilerOptions) -> tuple[float, str] | None:
    """The compute roof at the backend's thread count, measured once (in a child) if none is cached, before the
    profiled loop."""
    from speechperf.meters.roofs import roofs_for

    if options.timer_only:
        return None
    threads = backend.get_threads()
    roofs = roofs_for(threads)
    if roofs is None or roofs.peak is None:
        return None
    return roofs.peak.value, f"{roofs.peak.source} GEMM, {threads} thread(s)"
