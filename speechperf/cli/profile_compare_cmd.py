"""``speechperf profile-compare A.categories.json B.categories.json ...``: the category tables of two (or more)
profiled runs side by side, say a paddle and a torch training script of one model (docs/profiler.md).

Every profiled range that records ops writes its category table as ``<trace>.categories.json`` beside its trace.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("profile-compare")
@click.argument("tables", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--label", "labels", multiple=True, help="A name for each table, in order (default: its file name).")
def profile_compare(tables: tuple[Path, ...], labels: tuple[str, ...]) -> None:
    """Put the step-by-category tables of profiled runs side by side, each one's time over the first's."""
    from rich.console import Console

    from speechperf.errors import SpeechperfError
    from speechperf.profiler.categories import CategoryTable, side_by_side

    if len(tables) < 2:
        raise SpeechperfError(f"profile-compare needs two tables or more, got {len(tables)}: {tables[0]}")
    if labels and len(labels) != len(tables):
        raise SpeechperfError(f"--label was given {len(labels)} times for {len(tables)} tables; give one per table")
    loaded = [CategoryTable.read(path) for path in tables]
    backends = [t.backend for t in loaded]
    if not labels:  # the backend names say which is which, unless two runs share a backend
        labels = tuple(backends) if len(set(backends)) == len(backends) else tuple(_label(p) for p in tables)
    read = list(zip(labels, loaded))
    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    console.print(side_by_side(read))
    for _, table in read:
        console.print(table.source, highlight=False, markup=False, soft_wrap=True)  # it names its framework


def _label(path: Path) -> str:
    name = path.name
    return name[: -len(".categories.json")] if name.endswith(".categories.json") else path.stem
