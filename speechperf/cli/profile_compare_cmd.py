"""``speechperf profile-compare A.categories.json B.categories.json ...``: the category tables of two (or more)
profiled runs side by side, say a paddle and a torch training script of one model (docs/profiler.md).

Every profiled range that records ops writes its category table as ``<trace>.categories.json`` beside its trace.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

log = logging.getLogger(__name__)


@click.command("profile-compare")
@click.argument("tables", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--label",
    "labels",
    multiple=True,
    help="A name for each table, in order (default: its backend; its folder and file name where two share one).",
)
@click.option(
    "--allow-legacy",
    is_flag=True,
    help="Compare a table of paddle's legacy profiler API with the others anyway (refused by default: see below).",
)
def profile_compare(tables: tuple[Path, ...], labels: tuple[str, ...], allow_legacy: bool) -> None:
    """Put the step-by-category tables of profiled runs side by side, each one's time over the first's.

    A table of paddle's legacy profiler API (the s2t drop-in's default) is refused beside another: legacy records
    only the Python op calls inside a step, so its optimizer, backward and attention rows hold less than torch's or
    paddle api=new's (docs/profiler.md: the optimizer 2.11 ms per step under legacy, 10.64 under api=new, on one
    loop). Profile with api=new, or pass --allow-legacy."""
    from rich.console import Console

    from speechperf.errors import SpeechperfError
    from speechperf.profiler.categories import CategoryTable, side_by_side

    if len(tables) < 2:
        raise SpeechperfError(f"profile-compare needs two tables or more, got {len(tables)}: {tables[0]}")
    if labels and len(labels) != len(tables):
        raise SpeechperfError(f"--label was given {len(labels)} times for {len(tables)} tables; give one per table")
    loaded = [CategoryTable.read(path) for path in tables]
    legacy = [str(path) for path, table in zip(tables, loaded) if table.partial]
    if legacy:
        why = (
            f"{', '.join(legacy)}: recorded with paddle's legacy profiler API (api=legacy, the s2t drop-in's "
            "default), which records only the Python op calls of a step: its optimizer, backward and attention rows "
            "hold less than the other tables' (on one loop the optimizer read 2.11 ms per step under legacy, 10.64 "
            "under api=new), so the ratios mislead"
        )
        if not allow_legacy:
            raise SpeechperfError(f"{why}; profile with api=new in the options, or pass --allow-legacy")
        log.warning("%s", why)
    backends = [t.backend for t in loaded]
    if not labels:  # the backend names say which is which, unless two runs share a backend
        labels = tuple(backends) if len(set(backends)) == len(backends) else _labels(tables)
    read = list(zip(labels, loaded))
    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    console.print(side_by_side(read))
    for _, table in read:
        console.print(table.source, highlight=False, markup=False, soft_wrap=True)  # it names its framework


def _labels(paths: tuple[Path, ...]) -> tuple[str, ...]:
    """Each file's name without ``.categories.json``, with its folder where two names are the same."""
    names = [p.name[: -len(".categories.json")] if p.name.endswith(".categories.json") else p.stem for p in paths]
    if len(set(names)) == len(names):
        return tuple(names)
    return tuple(f"{p.parent.name}/{n}" if p.parent.name else str(p) for p, n in zip(paths, names))
