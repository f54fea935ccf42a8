"""Click options shared by several commands, defined once."""

from __future__ import annotations

import click

from speechperf.backend import KNOWN_DEVICES

backend_option = click.option(
    "--backend", "-b", "backend_name", required=True, metavar="NAME", help="A registered backend (see `speechperf backends`)."
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
