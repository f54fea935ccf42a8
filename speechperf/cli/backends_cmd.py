"""``speechperf backends``: every registered backend, whether it runs here and why not."""

from __future__ import annotations

import json

import attrs
import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def backends(as_json: bool) -> None:
    """List the registered backends with their version, availability, formats, devices, profilers and
    quantization methods (`speechperf optimize --method`)."""
    from speechperf.registry import backend_table

    rows = backend_table()
    if as_json:
        click.echo(json.dumps([attrs.asdict(r) for r in rows], indent=2))
        return

    from rich.console import Console
    from rich.table import Table

    table = Table(title="speechperf backends")
    for column in ("backend", "version", "available", "formats", "devices", "profilers", "quantization"):
        table.add_column(column)
    for r in rows:
        caps = r.capabilities
        table.add_row(
            r.name,
            r.version or "-",
            "yes" if r.available else f"no: {r.reason}",
            ", ".join(caps.formats),
            ", ".join(caps.devices),
            ", ".join(caps.profilers) or "-",
            ", ".join(caps.quantization) or "-",
        )
    # As wide as the rows need (as the bench table is), so that a pipe's default 80 columns cut no names short.
    Console(soft_wrap=False, width=200).print(table)
