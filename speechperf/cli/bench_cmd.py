"""``speechperf bench``: fairseq's S2ST benchmark on one backend, from a YAML config or the built-in default."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from speechperf.cache import cache_dir
from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import export_options, keep_options, optional_backend_option, seed_option
from speechperf.config.schema import DEVICES


@click.command()
@optional_backend_option()
@config_options(without="the tiny S2T on generated data")
@click.option("--warmup", type=click.IntRange(min=0), default=None, help="Untimed forwards per stage before timing.")
@click.option("--repeat", type=click.IntRange(min=1), default=None, help="Timed forwards per sample.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Threads, pinned the same on every backend.")
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
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def bench(
    backend_name,
    warmup,
    repeat,
    threads,
    device,
    seed,
    meters,
    memory_method,
    output,
    csv_path,
    md_path,
    outputs_path,
    text_path,
    dump_speech_waveforms_dir,
    dump_waveform_file_prefix,
    target_sr,
    keep,
    wide,
    quiet,
    **config_args,
) -> None:
    """Measure runtime, RTF, peak memory and FLOPs of a model (or a cascade) on one backend.

    Exit codes: 0 every sample measured; 1 some sample failed (the others are reported); 2 bad input (a --store
    that is not a speechperf store included: checked first, and again after the exports are written); 130
    interrupted (--output, --csv and --markdown keep what was measured). Each finished run is appended to the
    results store unless --no-store (`speechperf history`).
    """
    cfg = config_from_args(
        config_args,
        backend=backend_name,
        warmup=warmup,
        repeat=repeat,
        threads=threads,
        device=device,
        seed=seed,
        meters=meters,
        dump_speech_waveforms_dir=dump_speech_waveforms_dir,
        dump_waveform_file_prefix=dump_waveform_file_prefix,
        target_sr=target_sr,
    )
    from speechperf.benchmark.runner import run_benchmark

    if outputs_path is not None and outputs_path.suffix != ".npz":
        from speechperf.errors import SpeechperfError

        raise SpeechperfError(f"--save-outputs {outputs_path}: the file must end in .npz")
    code = run_benchmark(
        cfg,
        memory_method=memory_method,
        output=output,
        csv_path=csv_path,
        md_path=md_path,
        outputs_path=outputs_path,
        text_path=text_path,
        workdir=cache_dir(),
        keep=keep,
        progress=not quiet,
        wide=wide,
    )
    sys.exit(code)
