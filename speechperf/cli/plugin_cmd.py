"""``speechperf plugin new NAME``: write the skeleton of a backend plugin (speechperf.testing.plugin_template)."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def plugin() -> None:
    """Start a backend plugin (docs/backends.md)."""


@plugin.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "into",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder to write speechperf-NAME/ into.",
)
def new(name: str, into: Path) -> None:
    """Write speechperf-NAME/: a pyproject with the entry point, the backend with stubs that say what is not
    implemented yet, and the conformance test, so that `pip install -e .` then `pytest` runs the suite."""
    from speechperf.testing.plugin_template import write_plugin

    folder = write_plugin(name, into)
    click.echo(f"wrote {folder}; next: cd {folder} && pip install -e '.[test]' && python -m pytest tests")
