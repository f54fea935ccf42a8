"""``speechperf run``: load one model file on one backend and run it once on arrays from an ``.npz`` file."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import click

from speechperf.cli.options import backend_option, device_option, threads_option
from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import file_problem


def read_feeds(path: Path) -> dict:
    import numpy as np

    if path.suffix != ".npz":
        raise SpeechperfError(
            f"--feeds {path}: expected an .npz file of named arrays, got {path.suffix or 'no suffix'!r}"
        )
    if (problem := file_problem(path)) is not None:  # a FIFO would block np.load forever
        raise SpeechperfError(f"--feeds {shorten_path(path)} {problem}; expected an .npz file of named arrays")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:  # BadZipFile: a zip header, then garbage
        raise SpeechperfError(f"--feeds {path}: cannot read it as .npz ({exc})") from None


@click.command()
@backend_option
@click.option("--model", "model_path", required=True, type=click.Path(path_type=Path), help="The model file.")
@click.option(
    "--feeds",
    "feeds_path",
    required=True,
    type=click.Path(path_type=Path),
    help=".npz of input arrays, one per input name.",
)
@click.option("--format", "fmt", default=None, help="The model format, when the suffix does not tell.")
@device_option
@threads_option(default=1)
def run(backend_name: str, model_path: Path, feeds_path: Path, fmt: str | None, device: str, threads: int) -> None:
    """Run a model once and print its outputs' names, dtypes and shapes."""
    from speechperf.backend import ModelSpec
    from speechperf.registry import require_backend

    backend = require_backend(backend_name)
    feeds = read_feeds(feeds_path)
    session = backend.load(ModelSpec(model_path, format=fmt), device=device, threads=threads)
    start = time.perf_counter()
    outputs = session(feeds)
    backend.synchronize(device)
    elapsed = time.perf_counter() - start
    for name, value in outputs.items():
        click.echo(f"{name}\t{value.dtype}\t{list(value.shape)}")
    click.echo(f"one call, first run included: {elapsed * 1e3:.2f} ms", err=True)
