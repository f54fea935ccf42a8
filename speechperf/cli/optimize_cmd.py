"""``speechperf optimize``: int8 variants of every stage of a config against fp32, in one table."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from speechperf.cache import cache_dir
from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import (
    TIMEOUT_MAX,
    FiniteFloatRange,
    export_options,
    keep_options,
    optional_backend_option,
    threads_option,
)
from speechperf.values import DATASET_MAX, RUNS_MAX, split_items


def _methods_table(backend_name: str | None) -> str:
    from speechperf.registry import get_backend, known_backends

    names = [backend_name] if backend_name else known_backends()
    lines = []
    for name in names:
        methods = get_backend(name).capabilities.quantization
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
    help="Comma-separated quantization methods of the backend; `list` shows every backend's methods.",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1, max=RUNS_MAX),
    default=5,
    show_default=True,
    help="Fresh `speechperf bench` processes per variant, interleaved with the others.",
)
@click.option(
    "--calibration-size",
    type=click.IntRange(min=1, max=DATASET_MAX),
    default=4,
    show_default=True,
    help="Samples of the dataset whose real feeds calibrate the static methods.",
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the variants, their bench configs and the runs go (default: <cache>/optimize/<backend>).",
)
@threads_option(help="Threads, pinned the same on every run.")
@click.option(
    "--timeout",
    "timeout_s",
    type=FiniteFloatRange(min=1, max=TIMEOUT_MAX),
    default=None,
    help="Seconds one bench process may take before it counts as failed.",
)
@click.option(
    "--max-wer-increase",
    type=FiniteFloatRange(min=0),
    default=1.0,
    show_default=True,
    metavar="POINTS",
    help="A variant whose WER rises more than this (absolute points) over fp32's is over its quality budget.",
)
@click.option(
    "--max-bleu-drop",
    type=FiniteFloatRange(min=0),
    default=1.0,
    show_default=True,
    metavar="POINTS",
    help="A variant whose BLEU falls more than this below fp32's is over its quality budget.",
)
@click.option(
    "--min-agreement",
    type=FiniteFloatRange(min=0, max=1),
    default=None,
    metavar="FRACTION",
    help="A variant whose token or VAD agreement with fp32 is below this (e.g. 0.98) is over its quality budget.",
)
@click.option(
    "--max-mos-drop",
    type=FiniteFloatRange(min=0),
    default=0.2,
    show_default=True,
    metavar="MOS",
    help="A variant whose speech's DNSMOS OVRL falls more than this below fp32's is over its quality budget "
    "(needs the speech-quality extra).",
)
@click.option(
    "--max-mcd",
    type=FiniteFloatRange(min=0),
    default=None,
    metavar="DB",
    help="A variant whose speech is further than this from fp32's in mel-cepstral distortion (dB, DTW-aligned) "
    "is over its quality budget (default: no limit; the MCD is shown).",
)
@click.option(
    "--min-snr",
    "min_snr_db",
    type=FiniteFloatRange(),
    default=20.0,
    show_default=True,
    metavar="DB",
    help="A variant with a float output (a mask, a model file's outputs; not the speech waveform, judged by MCD "
    "and DNSMOS) below this SNR against fp32's in a sample is over its quality budget; a stage's `tolerance` "
    "key, where it has one, is used instead for its outputs.",
)
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
def optimize(backend_name, methods, threads, **options) -> None:
    """Post-training int8 quantization of every stage, judged against fp32 by file size, latency (speed-up ± σ
    over fresh processes), peak memory and fidelity (WER / token, VAD agreement / SNR).

    A variant faster than fp32 but over its quality budget (--max-wer-increase, --max-bleu-drop,
    --min-agreement, --max-mos-drop, --max-mcd, --min-snr) is reported as "over quality budget (WER +19.1
    points)", never as "ok".

    Exit codes: 0 every method measured (faster or not, within its quality budget or not: the status says);
    1 a method failed to quantize or to run (its row says why); 2 bad input; 130 interrupted (the JSON, CSV
    and Markdown keep the finished variants, the JSON marked complete: false).
    """
    if methods == "list":
        click.echo(_methods_table(backend_name))
        return
    study = {name: options.pop(name) for name in STUDY}
    cfg = config_from_args(options, backend=backend_name, threads=threads)  # what is left: the config options
    from speechperf.optimize.run import run_optimize

    sys.exit(run_optimize(cfg, _options(cfg.general.backend, methods, **study), workdir=cache_dir()))


#: optimize's options that describe the study (``_options``'s keywords), not the config.
STUDY = (
    "runs",
    "calibration_size",
    "out_dir",
    "timeout_s",
    "max_wer_increase",
    "max_bleu_drop",
    "min_agreement",
    "max_mos_drop",
    "max_mcd",
    "min_snr_db",
    "output",
    "csv_path",
    "md_path",
    "plot_path",
    "keep",
)


def _options(backend, methods, out_dir, max_wer_increase, max_bleu_drop, min_agreement, **study):
    """The study as ``run_optimize`` takes it, checked: no backend or no method is one line (exit 2)."""
    from speechperf.errors import SpeechperfError
    from speechperf.optimize.fidelity import QualityBudget
    from speechperf.optimize.run import OptimizeOptions, exports
    from speechperf.registry import known_backends

    if not backend:
        raise SpeechperfError(
            f"no backend given: pass --backend NAME (or general.backend); known backends: {', '.join(known_backends())}"
        )
    names = split_items(methods or "", "--method")
    if not names:
        raise SpeechperfError(
            f"no --method given; methods: {_methods_table(backend).split(': ', 1)[1]} (see --method list)"
        )
    return OptimizeOptions(
        backend=backend,
        methods=names,
        out_dir=out_dir or cache_dir() / "optimize" / backend,
        runs=study["runs"],
        calibration_size=study["calibration_size"],
        timeout_s=study["timeout_s"],
        budget=QualityBudget(
            max_wer_increase,
            max_bleu_drop,
            min_agreement,
            study.pop("max_mos_drop"),
            study.pop("max_mcd"),
            study.pop("min_snr_db"),
        ),
        exports=exports(study["output"], study["csv_path"], study["md_path"], study["keep"]),
        plot=study["plot_path"],
    )
