"""``speechperf bench``: fairseq's S2ST benchmark on one backend, from a YAML config or the built-in default."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from speechperf.cache import cache_dir
from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import export_options, keep_options, optional_backend_option, seed_option, threads_option
from speechperf.config.schema import DEVICES

if TYPE_CHECKING:
    from speechperf.benchmark.runner import BenchOptions
    from speechperf.config.schema import BenchConfig

#: bench's options that are general config keys (None: the config's value).
SETTINGS = (
    "warmup",
    "repeat",
    "threads",
    "device",
    "seed",
    "meters",
    "dump_speech_waveforms_dir",
    "dump_waveform_file_prefix",
    "target_sr",
)


@click.command()
@optional_backend_option()
@config_options(without="the tiny S2T on generated data")
@click.option("--warmup", type=click.IntRange(min=0), default=None, help="Untimed forwards per stage before timing.")
@click.option("--repeat", type=click.IntRange(min=1), default=None, help="Timed forwards per sample.")
@threads_option()
@click.option("--device", type=click.Choice(DEVICES), default=None)
@seed_option(None)
@click.option(
    "--meters",
    default=None,
    help="Comma-separated: runtime,memory,flops,quality (quality: WER / BLEU / intelligibility / VAD agreement "
    "against references, untimed; on by default where references exist and no ASR is needed).",
)
@click.option(
    "--memory-method",
    type=click.Choice(("hwm", "memory_profiler")),
    default="hwm",
    show_default=True,
    help="hwm: exact per-call RSS peak (Linux); memory_profiler: fairseq's sampling.",
)
@export_options(
    "JSON: the run's result document (rows, every raw timing, the environment, the config, the notes), written as "
    "results come in."
)
@click.option(
    "--save-outputs",
    "outputs_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write every stage's output per sample to this .npz (numeric arrays only; compared by `speechperf compare`).",
)
@click.option(
    "--save-text",
    "text_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the scored texts as TSV: id, reference, hypothesis, errors (needs the quality meter).",
)
@click.option("--dump-speech-waveforms-dir", default=None, help="Write each final waveform here (created if missing).")
@click.option("--dump-waveform-file-prefix", default=None, help="Dumped files are {prefix}_{i}_pred.wav.")
@click.option(
    "--target-sr", type=click.IntRange(min=1), default=None, help="Rate the dumped waveforms are resampled to."
)
@keep_options("run")
@click.option(
    "--wide",
    is_flag=True,
    help="Print every column (median, batches, throughput, footprint, roofline, ...); by default the key ones, "
    "fitted to the terminal. The exports have every column.",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Measure in N fresh processes, one after the other (as compare does); the JSON keeps each run's figures "
    "and the load it ran under, and `speechperf diff` tests over the runs (a significance test needs 2 or more "
    "on each side).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def bench(backend_name, quiet, runs, **params) -> None:
    """Measure runtime, RTF, peak memory and FLOPs of a model (or a cascade) on one backend.

    Exit codes: 0 every sample measured; 1 some sample failed (the others are reported); 2 bad input (a --store
    that is not a speechperf store included: checked first, and again after the exports are written); 130
    interrupted (--output, --csv and --markdown keep what was measured). Each finished run is appended to the
    results store unless --no-store (`speechperf history`). With --runs N, 1 also when a process run failed.
    """
    cfg, options = bench_options(params, backend_name, quiet, runs)
    if runs > 1:  # N child processes (speechperf.launch.bench_runs), each a `speechperf bench`
        from speechperf.launch.bench_runs import run_bench

        sys.exit(run_bench(cfg, runs, options.exports, memory_method=options.memory_method))
    from speechperf.benchmark.runner import run_benchmark

    sys.exit(run_benchmark(cfg, options))


#: bench's options that save what one process produced: one run's, not N processes'.
ONE_PROCESS = {
    "outputs_path": "--save-outputs",
    "text_path": "--save-text",
    "dump_speech_waveforms_dir": "--dump-speech-waveforms-dir",
}


def bench_options(
    p: dict[str, Any], backend_name: str | None, quiet: bool, runs: int
) -> tuple[BenchConfig, BenchOptions]:
    """The command line as ``run_benchmark`` takes it: the merged config and how it is measured; bad input is one
    line (exit 2) before anything is loaded."""
    from speechperf.benchmark.runner import BenchOptions
    from speechperf.errors import SpeechperfError

    settings = {name: p.pop(name) for name in SETTINGS}
    cfg = config_from_args(p, backend=backend_name, **settings)  # the config options, read by their names
    if p["outputs_path"] is not None and p["outputs_path"].suffix != ".npz":
        raise SpeechperfError(f"--save-outputs {p['outputs_path']}: the file must end in .npz")
    if runs > 1:
        given = {**p, "dump_speech_waveforms_dir": cfg.general.dump_speech_waveforms_dir}
        for key, option in ONE_PROCESS.items():
            if given.get(key):
                raise SpeechperfError(
                    f"{option} with --runs {runs}: it saves one process's outputs; run it without --runs"
                )
    return cfg, BenchOptions(
        workdir=cache_dir(),
        exports=p["exports"],
        memory_method=p["memory_method"],
        outputs_path=p["outputs_path"],
        text_path=p["text_path"],
        progress=not quiet,
        wide=p["wide"],
    )
