"""``speechperf show``: a result document shown again, from its JSON file or a stored run's id, exactly as the command
that wrote it printed it, and its Markdown, CSV and HTML written again (docs/results.md, "Views")."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from speechperf.cli.options import export_options

_path = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.argument("result", metavar="RESULT.json|ID")
@click.option("--store", type=_path, default=None, help="The results store an ID is read from; default: the cache's.")
@click.option("--wide", is_flag=True, help="Every column, where the kind has more than its key ones (bench).")
@export_options("JSON: the document again, upgraded to this version's schema.")
@click.option("--html", "html_path", type=_path, default=None, help="The HTML report, as the command's --html.")
def show(result: str, store: Path | None, wide: bool, exports, html_path) -> None:
    """Print a result document of any kind (bench, compare, optimize, tune, loadgen, diff, ...) as its command did.

    RESULT is a JSON file a command wrote with -o, or the id of a run in the results store (`speechperf history`
    lists them). Nothing is measured and nothing is stored. Exit codes: 0 shown; 2 bad input (not a document, a
    newer schema, no such run).
    """
    import attrs

    from speechperf.lifecycle import show_again
    from speechperf.store.keep import Keep

    exports = attrs.evolve(exports, keep=Keep(store=None, html=html_path))  # shown again: never stored again
    sys.exit(show_again(result, exports, store=store, wide=wide))
