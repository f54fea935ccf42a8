"""``speechperf optimize``: int8 variants of every stage of a config against fp32, in one table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from speechperf.cache import cache_dir
from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import (
    LAUNCH,
    QUALITY_BUDGET,
    calibration_size_option,
    export_options,
    keep_options,
    launch_options,
    optional_backend_option,
    quality_budget,
    quality_budget_options,
    threads_option,
)
from speechperf.values import RUNS_MAX, split_items

if TYPE_CHECKING:
    from speechperf.config.schema import BenchConfig
    from speechperf.optimize.run import OptimizeOptions


def _methods_table(backend_name: str | None) -> str:
    from speechperf.registry import get_backend, known_backends

    names = [backend_name] if backend_name else known_backends()
    lines = []
    for name in names:
        capabilities = get_backend(name).capabilities
        methods = (*capabilities.quantization, *capabilities.pruning)
        lines.append(f"{name}: {', '.join(methods) if methods else 'none'}")
    return "\n".join(lines)


@click.command()
@optional_backend_option()
@config_options(without="the tiny S2T on generated data")
@click.option(
    "--method",
    "methods",
    default=None,
    metavar="M1,M2",
    help="Comma-separated quantization and pruning methods of the backend (a pruning method followed by "
    "+INT8METHOD prunes, then quantizes: prune-l1-global+ort-dynamic); `list` shows every backend's methods.",
)
@click.option(
    "--sparsity",
    default=None,
    metavar="S1,S2",
    help="The pruning methods' sparsity: a fraction of the weights to remove, or a sweep (0.1,0.3,0.5), each level "
    "a variant.  [default: 0.3]",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1, max=RUNS_MAX),
    default=5,
    show_default=True,
    help="Fresh `speechperf bench` processes per variant, interleaved with the others.",
)
@calibration_size_option()
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the variants, their bench configs and the runs go (default: <cache>/optimize/<backend>).",
)
@threads_option(help="Threads, pinned the same on every run.")
@launch_options("Bench processes")
@quality_budget_options()
@export_options("JSON result document (docs/results.md) with every run and the table, rewritten as results come in.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The trade-off (.png or .svg): each variant's quality (WER, BLEU or agreement with fp32) against its "
    "speed-up and against its size, fp32 marked, the quality budget as a line. Needs the plot extra.",
)
@keep_options("study (with the trade-off plot)")
def optimize(**params) -> None:
    """Post-training int8 quantization of every stage, judged against fp32 by file size, latency (speed-up ± σ
    over fresh processes), peak memory and fidelity (WER / token, VAD agreement / SNR).

    A variant faster than fp32 but over its quality budget (--max-wer-increase, --max-bleu-drop,
    --min-agreement, --max-mos-drop, --max-mcd, --min-snr) is reported as "over quality budget (WER +19.1
    points)", never as "ok".

    Exit codes: 0 every method measured (faster or not, within its quality budget or not: the status says);
    1 a method failed to quantize or to run (its row says why); 2 bad input; 130 interrupted (the JSON, CSV
    and Markdown keep the finished variants, the JSON marked complete: false).
    """
    if params["methods"] == "list":
        click.echo(_methods_table(params["backend_name"]))
        return
    from speechperf.optimize.run import run_optimize

    sys.exit(run_optimize(*optimize_options(params)))


def optimize_options(p: dict[str, Any]) -> tuple[BenchConfig, OptimizeOptions]:
    """The config and the study as ``run_optimize`` takes them, checked: no backend or no method is one line (exit
    2) before anything runs."""
    from speechperf.errors import SpeechperfError
    from speechperf.optimize.run import OptimizeOptions
    from speechperf.registry import known_backends

    study = {name: p.pop(name) for name in (*QUALITY_BUDGET, *STUDY)}
    cfg = config_from_args(p, backend=p.pop("backend_name"), threads=p.pop("threads"))  # left: the config options
    backend = cfg.general.backend
    if not backend:
        raise SpeechperfError(
            f"no backend given: pass --backend NAME (or general.backend); known backends: {', '.join(known_backends())}"
        )
    names = split_items(study["methods"] or "", "--method")
    if not names:
        raise SpeechperfError(
            f"no --method given; methods: {_methods_table(backend).split(': ', 1)[1]} (see --method list)"
        )
    from speechperf.optimize.pruning import parse_sparsity

    return cfg, OptimizeOptions(
        backend=backend,
        methods=names,
        sparsity=parse_sparsity(study["sparsity"]),
        out_dir=study["out_dir"] or cache_dir() / "optimize" / backend,
        runs=study["runs"],
        calibration_size=study["calibration_size"],
        timeout_s=study["timeout_s"],
        executor=study["executor"],
        jobs=study["jobs"],
        budget=quality_budget(study),
        exports=study["exports"],
        plot=study["plot_path"],
        workdir=cache_dir(),
    )


#: optimize's options that describe the study, not the config.
STUDY = (
    "methods",
    "sparsity",
    "runs",
    "calibration_size",
    "out_dir",
    *LAUNCH,
    "exports",
    "plot_path",
)
