"""Click options shared by several commands, defined once."""

from __future__ import annotations

import math
from pathlib import Path

import click

from speechperf.backend import KNOWN_DEVICES

backend_option = click.option(
    "--backend",
    "-b",
    "backend_name",
    required=True,
    metavar="NAME",
    help="A registered backend (see `speechperf backends`).",
)
device_option = click.option(
    "--device", type=click.Choice(KNOWN_DEVICES), default="cpu", show_default=True, help="Where the model runs."
)
threads_option = click.option(
    "--threads",
    type=int,
    default=1,
    show_default=True,
    help="CPU threads for the framework; the same on every backend for a fair comparison.",
)


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses nan and inf: nan passes every comparison click's range makes."""

    name = "finite float range"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; {self._describe_range()}", param, ctx)
        return number


def export_options(json_help: str):
    """--output/-o (JSON, written as results come in), --csv and --markdown: the exports of bench and optimize."""
    options = [
        click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None, help=json_help),
        click.option(
            "--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="CSV export."
        ),
        click.option(
            "--markdown",
            "md_path",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Markdown export.",
        ),
    ]
    return stacked(options)


def stacked(options):
    """One decorator applying click ``options`` in the order listed (as if written one above the other)."""

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate
