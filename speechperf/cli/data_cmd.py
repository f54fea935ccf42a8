"""``speechperf data``: subsets, length statistics, and a synthesized real-speech dataset."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import click

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
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the random subset.")
@pickle_option
def subset(
    path: Path, dataset_type: str | None, kind: str, n: int, output: Path, seed: int, allow_pickle: bool
) -> None:
    """Write the N random, shortest or longest samples of PATH to OUTPUT (same format; .npy becomes .npz)."""
    from speechperf.data.subsets import choose, index_dataset, stats, write_subset
    from speechperf.outputs import check_output_path

    check_output_path(output, "--output")
    index = index_dataset(path, _type_of(path, dataset_type), allow_pickle=allow_pickle)
    chosen = choose(index, kind, n, seed)
    write_subset(index, chosen, output)
    s = stats(attrs.evolve(index, entries=tuple(chosen)))
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
@click.option("-n", "n", type=click.IntRange(min=1), default=8, show_default=True, help="Number of sentences.")
@click.option("--engine", type=click.Choice(("espeak-ng", "flite")), default="espeak-ng", show_default=True)
@click.option("--sample-rate", type=click.IntRange(min=1), default=16000, show_default=True)
def synth(out_dir: Path, n: int, engine: str, sample_rate: int) -> None:
    """Speak N sentences offline (espeak-ng or flite, then sox -D) into OUT_DIR as a raw dataset with transcripts."""
    from speechperf.data.synth import synthesize

    manifest = synthesize(out_dir, n, engine, sample_rate)
    click.echo(str(manifest))
