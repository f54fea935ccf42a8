"""Where the children of compare, optimize, tune and ``bench --runs`` run: a small registry of executors, one module
each.

- ``local``: child processes on this machine, one at a time unless ``--jobs`` says more (the default);
- ``ray``: the same children as Ray tasks, each pinned to its own cores (``speechperf[ray]``);
- ``inprocess``: each child's command run inside this process, one after another, for debugging (a breakpoint in
  bench code stops there); its timings share one interpreter, so they are not measurements.

Every executor gets the same children (``ChildRun``: a cell, a run number, its bench arguments and folder) and calls
``record`` with one ``RunResult`` per child as it finishes (or the one ``skip`` gives in place of launching it);
progress lines go to the ``speechperf`` logger. Adding one: a module here with ``SUMMARY``, ``check(jobs)`` and
``run(children, timeout_s, jobs, record, skip=None)``, and a line in ``EXECUTORS``; it becomes an ``--executor``
choice of every command that launches children, its ``SUMMARY`` in the option's help (docs/architecture.md,
"Where to add things").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from speechperf.errors import SpeechperfError
from speechperf.launch.child import ChildRun, Skip
from speechperf.launch.executors import inprocess, local, ray
from speechperf.launch.result import RunResult


class Executor(Protocol):
    """What an executor module defines."""

    #: One phrase for ``--executor``'s help: where the children run ("child processes here").
    SUMMARY: str

    def check(self, jobs: int) -> None:
        """Raise a one-line SpeechperfError, before any child runs, if this executor cannot run here as asked."""

    def run(
        self,
        children: Sequence[ChildRun],
        timeout_s: float | None,
        jobs: int,
        record: Callable[[RunResult], None],
        skip: Skip = None,
    ) -> None:
        """Run every child (at most ``jobs`` at once) and ``record`` each one's RunResult as it finishes. Just
        before launching a child, ``skip(child)`` may return the RunResult to record instead (a run not launched
        because an earlier one was refused its input)."""


#: Executor name -> the module that runs the children. The ``--executor`` choices are these names.
EXECUTORS: dict[str, Executor] = {"local": local, "ray": ray, "inprocess": inprocess}


def executor_help(names: Sequence[str] | None = None) -> str:
    """``--executor``'s help: each executor's name and ``SUMMARY`` (of ``names``; default all), in the registry's
    order."""
    return "; ".join(f"{name}: {m.SUMMARY}" for name, m in EXECUTORS.items() if names is None or name in names) + "."


def get_executor(name: str, jobs: int = 1) -> Executor:
    """Executor ``name``, checked to be able to run ``jobs`` children at once here."""
    if name not in EXECUTORS:
        raise SpeechperfError(f"--executor {name!r}: allowed: {', '.join(EXECUTORS)}")
    EXECUTORS[name].check(jobs)
    return EXECUTORS[name]
