"""``speechperf profile``: profile inference of a model file, or of a config's stages, with the uniform step profiler.

    speechperf profile --backend onnxruntime --model model.onnx --input x:4x80x100 \
        --profiler-options "batch_range=[10,20]; profile_path=/tmp/ort.json"
    speechperf profile --backend torch --config configs/S2T.yaml --preset tiny --dataset-size 3 \
        --profiler-options "batch_range=[2,5]; profile_path=/tmp/s2t_trace.json"

With ``--model`` each step is one call of the model on seeded random inputs. With ``--config`` (or neither: bench's
default config, the tiny S2T on generated data, so ``speechperf profile -b NAME --preset tiny`` runs) the stages are built
and the dataset read exactly as ``speechperf bench`` does, and each step is one sample through the whole pipeline:
every stage's forward, decoding loop included (the unit a speech engineer measures). The inputs of every stage are
made before the profiler starts, as ``bench`` does, so the hand-off between stages is not in the steps. Step ``k``
runs sample ``k mod N``: the loop cycles over the samples until ``batch_range`` ends, and the steps before
``batch_range[0]`` are the warm-up. The summary table, step time / ips (samples/s) and the trace path are printed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import (
    backend_option,
    device_option,
    export_options,
    keep_options,
    seed_option,
    threads_option,
)
from speechperf.errors import SpeechperfError

#: Options that only pick or change a config; meaningless with --model.
_CONFIG_ONLY = ("model_type", "sets", "preset", "dataset_path", "dataset_type", "dataset_size", "allow_pickle")
#: Options that only describe a model file's random inputs; a config's stages make their own inputs.
_MODEL_ONLY = ("input_specs", "fmt")


@click.command()
@backend_option
@click.option("--model", "model_path", default=None, type=click.Path(path_type=Path), help="The model file.")
@config_options(without="the tiny S2T on generated data, as bench runs (or give --model FILE)")
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
@export_options("JSON: the profile as a result document (kind profile: op table, categories, timing, trace path).")
@keep_options("profile")
@click.pass_context
def profile(ctx: click.Context, **p) -> None:
    """Profile inference of a model file (--model) or of a config's stages (--config): op table, step time / ips
    and the framework's trace. With --config one step is one sample through every stage, decoding included."""
    from speechperf.benchmark.profile import run_profile

    sys.exit(run_profile(_options(ctx, p)))


def _options(ctx: click.Context, p: dict[str, Any]):
    """The options as given, checked: --model or --config (never both), and no option of the other."""
    from speechperf.benchmark.profile import ModelFile, ProfileOptions
    from speechperf.profiler import ProfilerOptions

    profiler = ProfilerOptions.parse(p["profiler_options"])  # a bad string fails before any model is loaded
    exports = p["exports"]
    given = {name for name in ctx.params if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT}
    model_path, config_path = p["model_path"], p["config_path"]
    if model_path is not None and config_path is not None:
        raise SpeechperfError(
            f"--model {model_path} and --config {config_path} exclude each other: profile one "
            "model file (--model) or the stages of one config (--config)"
        )
    if model_path is not None:
        stray = [n for n in _CONFIG_ONLY if n in given]
        if stray:
            raise SpeechperfError(
                f"{_flag(stray[0])} applies to --config; with --model the inputs are random (use --input NAME:SHAPE)"
            )
        target = ModelFile(
            model_path, p["backend_name"], tuple(p["input_specs"]), p["fmt"], p["device"], p["threads"], p["seed"]
        )
        return ProfileOptions(target, profiler, exports)
    stray = [n for n in _MODEL_ONLY if n in given]
    if stray:
        raise SpeechperfError(
            f"{_flag(stray[0])} applies to --model; a config's stages make their inputs from "
            "the dataset (set stageN.inputs / stageN.format in the config)"
        )
    cfg = config_from_args(
        {**{k: p[k] for k in _CONFIG_ONLY}, "config_path": config_path},
        backend=p["backend_name"],
        # --threads/--device/--seed replace the config's values only when given
        threads=p["threads"] if "threads" in given else None,
        device=p["device"] if "device" in given else None,
        seed=p["seed"] if "seed" in given else None,
    )
    return ProfileOptions(cfg, profiler, exports)


def _flag(param: str) -> str:
    return {
        "sets": "--set",
        "allow_pickle": "--unsafe-pickle-runs-code",
        "input_specs": "--input",
        "fmt": "--format",
    }.get(param, "--" + param.replace("_", "-"))
