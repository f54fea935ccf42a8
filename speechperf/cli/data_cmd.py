"""``speechperf data``: subsets, length statistics, and a synthesized real-speech dataset."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import click

from speechperf.cli.options import seed_option
from speechperf.values import DATASET_MAX, SAMPLE_RATE_MAX

DATA_TYPES = ("raw", "npz", "npy", "text")
_SUFFIX_TYPES = {".tsv": "raw", ".npz": "npz", ".npy": "npy", ".txt": "text"}


def _type_of(path: Path, given: str | None) -> str:
    from speechperf.data.formats import require_file
    from speechperf.errors import SpeechperfError

    require_file(path)
    if given:
        return given
    if path.suffix in _SUFFIX_TYPES:
        return _SUFFIX_TYPES[path.suffix]
    raise SpeechperfError(
        f"cannot tell the dataset type of {path} from its suffix; pass --type ({', '.join(DATA_TYPES)})"
    )


type_option = click.option(
    "--type",
    "dataset_type",
    type=click.Choice(DATA_TYPES),
    default=None,
    help="Dataset format (default: from the suffix: .tsv raw, .npz, .npy, .txt text).",
)
pickle_option = click.option(
    "--unsafe-pickle-runs-code",
    "allow_pickle",
    is_flag=True,
    help="Allow fairseq's pickled .npy: unpickling runs code from the file.",
)


@click.group()
def data() -> None:
    """Dataset tools: random / shortest / longest subsets, length statistics, a synthesized speech dataset."""


@data.command()
@click.argument("path", type=click.Path(path_type=Path))
@type_option
@click.option("--kind", type=click.Choice(("random", "short", "long")), default="random", show_default=True)
@click.option("-n", "n", type=click.IntRange(min=1), required=True, help="Number of samples to keep.")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="File to write the subset to.")
@seed_option(1, help="Seed of the random subset.")
@pickle_option
def subset(
    path: Path, dataset_type: str | None, kind: str, n: int, output: Path, seed: int, allow_pickle: bool
) -> None:
    """Write the N random, shortest or longest samples of PATH to OUTPUT (same format; .npy becomes .npz)."""
    from speechperf.data.subsets import check_subset_output, choose, index_dataset, stats, write_subset

    dataset_type = _type_of(path, dataset_type)
    check_subset_output(path, dataset_type, output)  # before reading: never its own input, never a FIFO
    index = index_dataset(path, dataset_type, allow_pickle=allow_pickle)
    stats(index)  # a dataset with no samples is refused before anything is written
    chosen = choose(index, kind, n, seed)
    s = stats(attrs.evolve(index, entries=tuple(chosen)))
    write_subset(index, chosen, output)
    click.echo(f"wrote {len(chosen)} {kind} samples to {output} (lengths {s.min_len}..{s.max_len} {s.unit})", err=True)


@data.command("stats")
@click.argument("path", type=click.Path(path_type=Path))
@type_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pickle_option
def stats_cmd(path: Path, dataset_type: str | None, as_json: bool, allow_pickle: bool) -> None:
    """Print the number of samples, max / min / avg length and the total audio duration of PATH."""
    from speechperf.data.subsets import index_dataset, stats

    s = stats(index_dataset(path, _type_of(path, dataset_type), allow_pickle=allow_pickle))
    if as_json:
        click.echo(json.dumps(attrs.asdict(s), indent=2))
        return
    click.echo(f"samples\t{s.count}")
    click.echo(f"max_len\t{s.max_len} {s.unit}")
    click.echo(f"min_len\t{s.min_len} {s.unit}")
    click.echo(f"avg_len\t{s.avg_len:.1f} {s.unit}")
    total = "n/a (not audio)" if s.total_audio_s is None else f"{s.total_audio_s:.2f} s"
    click.echo(f"total_audio\t{total}")


@data.command()
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("-n", "n", type=click.IntRange(1, DATASET_MAX), default=8, show_default=True, help="Number of sentences.")
@click.option(
    "--engine",
    type=click.Choice(("espeak-ng", "flite", "kokoro")),
    default="espeak-ng",
    show_default=True,
    help="kokoro: Kokoro-82M on the ONNX backend (speechperf[kokoro]), espeak-ng phonemes in --language.",
)
@click.option(
    "--language",
    type=click.Choice(("en", "pt-br")),
    default="en",
    show_default=True,
    help="Language (espeak-ng voice) spoken; pt-br speaks the en<->pt smoke set, English references beside it.",
)
@click.option(
    "--smoke-set",
    is_flag=True,
    help="English: speak the en<->pt smoke set's English side, with its Portuguese references (implied by pt-br).",
)
@click.option("--sample-rate", type=click.IntRange(1, SAMPLE_RATE_MAX), default=16000, show_default=True)
def synth(out_dir: Path, n: int, engine: str, language: str, smoke_set: bool, sample_rate: int) -> None:
    """Speak N sentences offline (espeak-ng, flite or Kokoro, then sox -D) into OUT_DIR as a raw dataset with
    transcripts; with translations (pt-br, --smoke-set) also sentences.ref and a fairseq translation.tsv."""
    from speechperf.data.synth import LANGUAGES, synthesize

    speak = _kokoro_speaker(LANGUAGES[language]) if engine == "kokoro" else None
    manifest = synthesize(out_dir, n, engine, sample_rate, language, smoke_set, speak)
    click.echo(str(manifest))


def _kokoro_speaker(voice: str):
    """Kokoro-82M (the kokoro extra's file) loaded on the backend that runs ONNX files, one thread."""
    from speechperf.adapters.kokoro import KokoroFrontend, KokoroSpeaker
    from speechperf.backend import ModelSpec
    from speechperf.benchmark.backend_files import onnx_runner
    from speechperf.errors import SpeechperfError
    from speechperf.registry import require_backend
    from speechperf.zoo import kokoro

    runner = onnx_runner()
    if runner is None:
        raise SpeechperfError('--engine kokoro needs a backend that runs ONNX files: pip install "speechperf[onnx]"')
    session = require_backend(runner).load(ModelSpec(path=kokoro.model_file()), threads=1)
    frontend = KokoroFrontend(kokoro.vocabulary(), kokoro.voice_pack(kokoro.DEFAULT_SPEAKER), voice)
    return KokoroSpeaker(session, frontend, kokoro.SAMPLE_RATE)
