"""What the tests of ``speechperf show`` (tests/test_show_*.py) share: a command's exports, running it (in this
process or in one of its own), the id its run was stored as, and the check that ``show`` on its JSON and on that id
prints what the command printed and writes the same Markdown and CSV.

A run's files are named by a *stem*, a path without its suffix: ``tmp_path / "run"`` stands for ``run.json``,
``run.md`` and ``run.csv`` in ``tmp_path``.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from click.testing import CliRunner, Result

#: The files ``show`` writes again byte for byte, in the order ``written`` and ``show`` give them.
SAME = ("md", "csv")


def file(stem: Path, suffix: str) -> Path:
    """``stem`` with ``suffix``: ``file(tmp_path / "run", "md")`` is ``tmp_path / "run.md"``."""
    return stem.with_name(f"{stem.name}.{suffix}")


def export_args(stem: Path) -> list[str]:
    """Every export of a command into ``stem``: ``-o STEM.json --markdown STEM.md --csv STEM.csv``."""
    return ["-o", str(file(stem, "json")), "--markdown", str(file(stem, "md")), "--csv", str(file(stem, "csv"))]


def invoke(*args: object) -> Result:
    """``speechperf ARGS`` in this process (click's runner), each argument as a string; its exit code unchecked."""
    from speechperf.cli import main

    return CliRunner().invoke(main, [str(arg) for arg in args])


def speechperf(*args: object, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``speechperf ARGS`` in a process of its own (``python -m speechperf``), asserted to exit 0."""
    command = [sys.executable, "-m", "speechperf", *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done


def stored_id(done: subprocess.CompletedProcess, kind: str = r"[\w-]+") -> str:
    """The id a run's stderr says it was stored as (``KIND: stored as run N in STORE``; ``kind`` a regex, any kind
    by default), asserted to be said."""
    stored = re.search(rf"{kind}: stored as run (\d+) in ", done.stderr)
    assert stored is not None, done.stderr[-2000:]
    return stored.group(1)


def last_stored_id(store: Path) -> str:
    """The id of the newest run in the SQLite results store ``store`` (where the run's stderr is not at hand)."""
    with sqlite3.connect(store) as db:
        (run_id,) = db.execute("SELECT MAX(id) FROM runs").fetchone()
    assert run_id is not None, f"no run in {store}"
    return str(run_id)


def written(stem: Path) -> tuple[str, ...]:
    """The Markdown and the CSV a command wrote into ``stem`` (``SAME``'s order), as text."""
    return tuple(file(stem, suffix).read_text() for suffix in SAME)


def show(source: object, stem: Path, *more: object) -> tuple[str, ...]:
    """``speechperf show SOURCE MORE`` with every export into ``stem``, asserted to exit 0: its stdout, then the
    Markdown and the CSV it wrote (``written``)."""
    shown = invoke("show", source, *export_args(stem), *more)
    assert shown.exit_code == 0, shown.output
    return (shown.stdout, *written(stem))


def assert_shown_again(
    stdout: str, stem: Path, sources: Iterable[object], *more: object, into: Path | None = None
) -> list[Path]:
    """``show`` on each of ``sources`` (the run's JSON file, its stored id) prints the run's ``stdout`` and writes its
    Markdown and CSV (``stem``.md/.csv) again, byte for byte. ``more``: show's other options (``--store``,
    ``--wide``). Its files go into ``into`` (default: ``stem``'s folder) as ``STEM-again-1``, ``STEM-again-2``, ...;
    their stems are returned, for what a test checks of the JSON it wrote again."""
    run = written(stem)
    stems = []
    for n, source in enumerate(sources, 1):
        again = (into or stem.parent) / f"{stem.name}-again-{n}"
        shown, *files = show(source, again, *more)
        assert shown == stdout, f"show {source}: stdout"
        for suffix, text, first in zip(SAME, files, run, strict=True):
            assert text == first, f"show {source}: .{suffix}"
        stems.append(again)
    assert stems, "no source to show"
    return stems


def assert_shown_from_json_and_store(stdout: str, stem: Path, store: Path, run_id: str | None = None) -> list[Path]:
    """``assert_shown_again`` on the run's JSON (``stem``.json) and on its id in ``store`` (``run_id``, by default the
    newest run there), each shown with ``--store``: the stems of the files show wrote."""
    sources = [file(stem, "json"), run_id or last_stored_id(store)]
    return assert_shown_again(stdout, stem, sources, "--store", store)
