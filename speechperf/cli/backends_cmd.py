"""``speechperf backends``: every registered backend, whether it runs here and why not."""

from __future__ import annotations

import json

import attrs
import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def backends(as_json: bool) -> None:
    """List the registered backends with their version, availability, formats, devices, profilers,
    quantization methods (`speechperf optimize --method`) and the variants `compare --best` measures."""
    from speechperf.registry import backend_table

    rows = backend_table()
    if as_json:
        click.echo(json.dumps([attrs.asdict(r) for r in rows], indent=2))
    else:
        _print_tables(rows)


def _print_tables(rows) -> None:
    """The backends, then the variants each declares, on the terminal (rich)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="speechperf backends")
    # Names never wrap; long cells fold instead of being cut with an ellipsis, so an install hint is shown whole.
    for column in ("backend", "version", "available", "formats", "devices", "profilers", "quantization", "optional"):
        table.add_column(column, no_wrap=column == "backend", overflow="fold")
    for r in rows:
        caps = r.capabilities
        cells = (
            r.name,
            r.version or "-",
            "yes" if r.available else f"no: {r.reason}",
            ", ".join(caps.formats),
            ", ".join(caps.devices),
            ", ".join(caps.profilers) or "-",
            ", ".join(caps.quantization) or "-",
            ", ".join(r.optional) or "-",
        )
        # Reasons hold install hints like `pip install "speechperf[torch]"`, which rich would read as markup.
        table.add_row(*(escape(c) for c in cells))
    # A pipe gets rich's default 80 columns, too narrow for eight columns: never narrower than 160.
    console = Console(soft_wrap=False)
    console.width = max(console.width, 160)
    console.print(table)
    listed = Table(title="variants (speechperf compare --best measures each)")
    for column in ("backend", "variant", "format; options"):
        listed.add_column(column, no_wrap=column != "format; options", overflow="fold")
    for r in rows:
        for described in r.variants:
            name, _, rest = described.partition(" (")
            listed.add_row(escape(r.name), escape(name), escape(rest.rstrip(")") or "the stage's own path"))
    console.print(listed)
