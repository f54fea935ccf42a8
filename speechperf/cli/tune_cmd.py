"""``speechperf tune``: the fastest way to run a pipeline on this machine within a quality budget."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from speechperf.cache import cache_dir
from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import (
    QUALITY_BUDGET,
    ThreadCounts,
    calibration_size_option,
    export_options,
    keep_options,
    launch_options,
    quality_budget,
    quality_budget_options,
    seconds_option,
)
from speechperf.values import RUNS_MAX

if TYPE_CHECKING:
    from speechperf.config.schema import BenchConfig
    from speechperf.tune.run import TuneOptions


@click.command()
@config_options(without="the tiny S2T on generated data")
@click.option(
    "--backends",
    default=None,
    metavar="B1,B2",
    help="Backends to search, comma-separated (default: every installed one); the first runs the reference "
    "(fp32, every stage on its default path).",
)
@click.option(
    "--precisions",
    default="fp32,bf16,int8",
    show_default=True,
    metavar="P1,P2",
    help="fp32 (every variant of every backend), bf16 (a backend's bf16 variants, on a CPU with AVX-512 BF16 or "
    "AMX), int8 (every quantization method of every backend), pruned (FFN neurons removed at 10% and 30%, the "
    "layers rebuilt smaller, where a backend offers pruning; not in the default).",
)
@click.option(
    "--threads",
    type=ThreadCounts(),
    default="1",
    show_default=True,
    metavar="N[,M...]",
    help="Thread counts to search.",
)
@click.option(
    "--objective",
    type=click.Choice(["latency", "throughput", "memory", "server"]),
    default="latency",
    show_default=True,
    help="What the winner is best at: mean latency per sample, samples per second (with --batch-sizes), peak RSS, "
    "or server: MLPerf LoadGen Server's completed samples/s within --latency, searching instances, threads and "
    "dynamic batching per stage (docs/tune.md).",
)
@click.option(
    "--latency",
    default=None,
    metavar="pNN=BOUND",
    help="With --objective server: the latency percentile and its bound, as MLPerf states them (p99=500ms, "
    "p90=1.5s). Default: MLPerf Server's for speech, p99=1000ms.",
)
@click.option(
    "--batch-sizes",
    default="1",
    show_default=True,
    metavar="N[,M...]",
    help="Batch sizes the pipelines run at, with --objective throughput.",
)
@seconds_option(
    "--budget", default=3600.0, help="Seconds the whole tune may take, quantizing and the final compare included."
)
@quality_budget_options()
@calibration_size_option()
@click.option(
    "--final-runs",
    type=click.IntRange(min=2, max=RUNS_MAX),
    default=3,
    show_default=True,
    help="Interleaved runs of each pipeline in the final compare.",
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the winner's config and model files, the final compare and the search's state go (default: "
    "<cache>/tune/<config name>); a rerun with the same folder resumes.",
)
@launch_options(
    "Candidates' processes",
    refuse={
        "inprocess": "its runs share this process, so their timings are not measurements, and no timeout stops them "
        "at --budget"
    },
    executor_note=" Ray spreads the processes over the cluster's nodes with --jobs; a run timed on a node with "
    "another CPU than this machine's fails.",
)
@export_options("JSON result document (docs/results.md) with every candidate, rewritten as each phase ends.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The Pareto plot (.png or .svg): quality and peak memory against the objective. Needs the plot extra.",
)
@keep_options("tune (with the Pareto plot)")
def tune(**params) -> None:
    """Search backends x execution variants x precisions x threads, stage by stage, for the fastest pipeline
    within a quality budget; write it as a bench config and compare it with each framework at its best.

    Exit codes: 0 an answer (a winner significantly faster than the reference, or the reference on a tie); 1 no
    winner (every pipeline over the quality budget or failed, or the budget ended first: the best measured so far
    is said); 2 bad input; 3 nothing measured (one line with the --budget a first pass needs); 130 interrupted (a
    rerun with the same --out-dir resumes, reusing every finished process).
    """
    from speechperf.tune.run import run_tune

    sys.exit(run_tune(*tune_options(click.get_current_context(), params)))


def tune_options(ctx: click.Context, p: dict[str, Any]) -> tuple[BenchConfig, TuneOptions]:
    """The config and the search as ``run_tune`` takes them, checked: bad input is one line (exit 2)."""
    from speechperf.errors import SpeechperfError
    from speechperf.tune.run import TuneOptions

    study = {name: p.pop(name) for name in (*QUALITY_BUDGET, *STUDY)}
    kinds, sizes = _precisions(study["precisions"]), _batch_sizes(study["batch_sizes"])
    if study["objective"] != "throughput" and sizes != [1]:
        raise SpeechperfError(
            f"--batch-sizes {study['batch_sizes']}: only with --objective throughput (latency and memory are per "
            "sample)"
        )
    if study["latency"] is not None and study["objective"] != "server":
        raise SpeechperfError(f"--latency {study['latency']}: only with --objective server")
    from speechperf.tune.serving import parse_latency

    latency = parse_latency(study["latency"]) if study["objective"] == "server" else None
    cfg = config_from_args(p)  # what is left: the config options
    out_dir = study["out_dir"] or cache_dir() / "tune" / _config_name(p.get("config_path"))
    return cfg, TuneOptions(
        backends=tuple(_backends(study["backends"])),
        precisions=tuple(kinds),
        threads=tuple(study["threads"]),
        objective=study["objective"],
        budget_s=study["budget"],
        budget=quality_budget(study),
        out_dir=out_dir,
        exports=study["exports"],
        batch_sizes=tuple(sizes),
        calibration_size=study["calibration_size"],
        timeout_s=study["timeout_s"],
        final_runs=study["final_runs"],
        executor=study["executor"],
        jobs=study["jobs"],
        plot=study["plot_path"],
        options={k: str(v) if isinstance(v, Path) else v for k, v in ctx.params.items()},
        workdir=cache_dir(),
        latency=latency,
    )


#: tune's options that describe the search, not the config.
STUDY = (
    "backends",
    "precisions",
    "threads",
    "objective",
    "latency",
    "batch_sizes",
    "budget",
    "executor",
    "jobs",
    "calibration_size",
    "final_runs",
    "out_dir",
    "timeout_s",
    "exports",
    "plot_path",
)


def _config_name(path) -> str:
    return Path(path).stem if path else "default"


def _backends(text: str | None) -> list[str]:
    from speechperf.launch.lists import backend_names
    from speechperf.registry import get_backend

    names = backend_names(text)
    if text is None:  # the default: every installed one
        names = [n for n in names if get_backend(n).availability().ok]
    return list(names)


def _precisions(text: str) -> list[str]:
    from speechperf.errors import SpeechperfError
    from speechperf.tune.space import PRECISIONS
    from speechperf.values import split_items

    names = split_items(text, "--precisions")
    unknown = [n for n in names if n not in PRECISIONS]
    if unknown or not names:
        raise SpeechperfError(
            f"--precisions {text}: unknown {unknown[0] if unknown else 'empty'}; allowed: {', '.join(PRECISIONS)}"
        )
    return list(names)


def _batch_sizes(text: str) -> list[int]:
    from speechperf.errors import SpeechperfError

    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(n < 1 or n > 4096 for n in sizes):
        raise SpeechperfError(f"--batch-sizes {text}: expected whole numbers from 1 to 4096, comma-separated")
    return sorted(set(sizes))
