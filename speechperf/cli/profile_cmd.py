"""``speechperf profile``: profile the inference of a model file with the uniform step profiler.

    speechperf profile --backend onnxruntime --model model.onnx --input x:4x80x100 \
        --profiler-options "batch_range=[10,20]; profile_path=/tmp/ort.json"

Each step is one call of the model on seeded random inputs; the run lasts until ``batch_range`` ends, and the
summary table, step time / ips and the trace path are printed. (Profiling a config's stages plugs into
``speechperf.profiler.workload.profile_stages`` the same way, one stage per config stage.)
"""

from __future__ import annotations

from pathlib import Path

import click

from speechperf.cli.options import backend_option, device_option, threads_option


@click.command()
@backend_option
@click.option("--model", "model_path", required=True, type=click.Path(path_type=Path), help="The model file.")
@click.option(
    "--input",
    "input_specs",
    multiple=True,
    metavar="NAME:SHAPE[:DTYPE]",
    help="Shape (and dtype) of a random input, e.g. x:4x80x100 or tokens:1x12:int64; needed for dynamic axes.",
)
@click.option("--format", "fmt", default=None, help="The model format, when the suffix does not tell.")
@device_option
@threads_option
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option(
    "--profiler-options",
    default="",
    help='PaddleSpeech-style options, e.g. "batch_range=[10,20]; sorted_key=total; profile_path=/tmp/profile".',
)
def profile(
    backend_name: str,
    model_path: Path,
    input_specs: tuple[str, ...],
    fmt: str | None,
    device: str,
    threads: int,
    seed: int,
    profiler_options: str,
) -> None:
    """Profile inference of a model file: op table, step time / ips and a Chrome trace."""
    from speechperf.backend import ModelSpec
    from speechperf.profiler import ProfilerOptions
    from speechperf.profiler.workload import ProfileStage, parse_input_spec, profile_stages, random_feeds
    from speechperf.registry import require_backend

    options = ProfilerOptions.parse(profiler_options)  # a bad string fails before any model is loaded
    given = {}
    for text in input_specs:
        name, shape, dtype = parse_input_spec(text)
        given[name] = (shape, dtype)
    backend = require_backend(backend_name)
    session = backend.load(ModelSpec(model_path, format=fmt), device=device, threads=threads)
    feeds = random_feeds(session.inputs, given, seed)
    click.echo(f"profiling {model_path} on {backend_name}: {options!r}", err=True)
    profile_stages(backend, [ProfileStage(model_path.name, session, feeds)], options)
