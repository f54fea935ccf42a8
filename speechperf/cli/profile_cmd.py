"""``speechperf profile``: profile inference of a model file, or of a config's stages, with the uniform step profiler.

    speechperf profile --backend onnxruntime --model model.onnx --input x:4x80x100 \
        --profiler-options "batch_range=[10,20]; profile_path=/tmp/ort.json"
    speechperf profile --backend torch --config configs/S2T.yaml --preset tiny --dataset-size 3 \
        --profiler-options "batch_range=[2,5]; profile_path=/tmp/s2t_trace.json"

With ``--model`` each step is one call of the model on seeded random inputs. With ``--config`` the stages are built
and the dataset read exactly as ``speechperf bench`` does, and each step is one sample through the whole pipeline:
every stage's forward, decoding loop included (the unit a speech engineer measures). The inputs of every stage are
made before the profiler starts, as ``bench`` does, so the hand-off between stages is not in the steps. Step ``k``
runs sample ``k mod N``: the loop cycles over the samples until ``batch_range`` ends, and the steps before
``batch_range[0]`` are the warm-up. The summary table, step time / ips (samples/s) and the trace path are printed.
"""

from __future__ import annotations

from pathlib import Path

import click

from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import backend_option, device_option, seed_option, threads_option
from speechperf.errors import SpeechperfError

#: Options that only pick or change a config; meaningless with --model.
_CONFIG_ONLY = ("model_type", "sets", "preset", "dataset_path", "dataset_type", "dataset_size", "allow_pickle")
#: Options that only describe a model file's random inputs; a config's stages make their own inputs.
_MODEL_ONLY = ("input_specs", "fmt")


@click.command()
@backend_option
@click.option("--model", "model_path", default=None, type=click.Path(path_type=Path), help="The model file.")
@config_options(without="give --model FILE")
@click.option(
    "--input",
    "input_specs",
    multiple=True,
    metavar="NAME:SHAPE[:DTYPE]",
    help="With --model: shape (and dtype) of a random input, e.g. x:4x80x100 or tokens:1x12:int64.",
)
@click.option("--format", "fmt", default=None, help="With --model: the model format, when the suffix does not tell.")
@device_option
@threads_option(default=1)
@seed_option(0, help="Seed of the random inputs (--model) or general.seed (--config).")
@click.option(
    "--profiler-options",
    default="",
    help='PaddleSpeech-style options, e.g. "batch_range=[10,20]; sorted_key=total; profile_path=/tmp/profile".',
)
@click.pass_context
def profile(
    ctx: click.Context,
    backend_name: str,
    model_path: Path | None,
    config_path: Path | None,
    input_specs: tuple[str, ...],
    fmt: str | None,
    device: str,
    threads: int,
    seed: int,
    profiler_options: str,
    **config_args,
) -> None:
    """Profile inference of a model file (--model) or of a config's stages (--config): op table, step time / ips
    and the framework's trace. With --config one step is one sample through every stage, decoding included."""
    from speechperf.profiler import ProfilerOptions

    options = ProfilerOptions.parse(profiler_options)  # a bad string fails before any model is loaded
    _check_trace_path(options)
    given = {name for name in ctx.params if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT}
    if model_path is not None and config_path is not None:
        raise SpeechperfError(
            f"--model {model_path} and --config {config_path} exclude each other: profile one "
            "model file (--model) or the stages of one config (--config)"
        )
    if model_path is None and config_path is None:
        raise SpeechperfError(
            "nothing to profile: give --model FILE (one model on random inputs) or --config FILE "
            "(a config's stages on its dataset)"
        )
    if model_path is not None:
        stray = [n for n in _CONFIG_ONLY if n in given]
        if stray:
            raise SpeechperfError(
                f"{_flag(stray[0])} applies to --config; with --model the inputs are random (use --input NAME:SHAPE)"
            )
        _profile_model(backend_name, model_path, input_specs, fmt, device, threads, seed, options)
        return
    stray = [n for n in _MODEL_ONLY if n in given]
    if stray:
        raise SpeechperfError(
            f"{_flag(stray[0])} applies to --model; a config's stages make their inputs from "
            "the dataset (set stageN.inputs / stageN.format in the config)"
        )
    cfg = config_from_args(
        {**config_args, "config_path": config_path},
        backend=backend_name,
        # --threads/--device/--seed replace the config's values only when given
        threads=threads if "threads" in given else None,
        device=device if "device" in given else None,
        seed=seed if "seed" in given else None,
    )
    _profile_config(cfg, options)


def _check_trace_path(options) -> None:
    """Refuse a trace path that cannot be written before profiling, not after it (a folder takes the trace inside)."""
    from speechperf.profiler.base import trace_path_of

    if options.timer_only:
        return
    trace_path_of(options.profile_path, "trace.json")


def _flag(param: str) -> str:
    return {
        "sets": "--set",
        "allow_pickle": "--unsafe-pickle-runs-code",
        "input_specs": "--input",
        "fmt": "--format",
    }.get(param, "--" + param.replace("_", "-"))


def _profile_model(backend_name, model_path, input_specs, fmt, device, threads, seed, options) -> None:
    from speechperf.backend import ModelSpec
    from speechperf.profiler.workload import ProfileStage, parse_input_spec, profile_stages, random_feeds
    from speechperf.registry import require_backend

    given = {}
    for text in input_specs:
        name, shape, dtype = parse_input_spec(text)
        given[name] = (shape, dtype)
    backend = require_backend(backend_name)
    session = backend.load(ModelSpec(model_path, format=fmt), device=device, threads=threads)
    feeds = random_feeds(session.inputs, given, seed)
    click.echo(f"profiling {model_path} on {backend_name}: {options!r}", err=True)
    profile_stages(
        backend, [ProfileStage.of_session(model_path.name, session, feeds)], options, _roof(backend, options)
    )


def _profile_config(cfg, options) -> None:
    """Build the config's stages and inputs as ``bench`` does, then profile one sample per step."""
    from speechperf.benchmark import build
    from speechperf.benchmark.core import benchmark_for
    from speechperf.benchmark.validate import check_config
    from speechperf.cache import cache_dir
    from speechperf.data import load_dataset
    from speechperf.profiler.workload import ProfileStage, profile_stages
    from speechperf.registry import require_backend

    general = cfg.general
    check_config(cfg)
    dataset = load_dataset(general, cfg.roles[0])
    from speechperf.benchmark.derive import config_for_backend

    workdir = cache_dir()
    cfg = config_for_backend(cfg, general.backend, workdir)
    backend = require_backend(general.backend)
    (stages,) = build.open_stages(cfg, backend, workdir)
    with build.stdout_to_stderr():
        pipeline = benchmark_for(
            general.model_type, stages, backend, device=general.device, threads=general.threads, meters=()
        )
        pipeline.generate_stage_inputs(dataset)  # untimed, before the profiler starts, as bench does
    for message in pipeline.failed.values():
        click.echo(f"note: left out of the profile: {message}", err=True)
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
    click.echo(
        f"profiling {cfg.source} ({general.model_type}) on {backend.name}, {general.threads} thread(s): "
        f"one step = one sample through {chain}, cycling over {len(sids)} sample(s); {options!r}",
        err=True,
    )
    profile_stages(backend, profiled, options, _roof(backend, options))


def _roof(backend, options) -> tuple[float, str] | None:
    """The compute roof at the backend's thread count, measured once (in a child) if none is cached, before the
    profiled loop."""
    from speechperf.meters.roofs import roofs_for
    from speechperf.profiler import ProfilerOptions

    if ProfilerOptions.coerce(options).timer_only:
        return None
    threads = backend.get_threads()
    roofs = roofs_for(threads)
    if roofs is None or roofs.peak is None:
        return None
    return roofs.peak.value, f"{roofs.peak.source} GEMM, {threads} thread(s)"
