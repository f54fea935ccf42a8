"""Where the children of ``speechperf compare`` run: a small registry of executors, one module each.

- ``local``: child processes on this machine, one at a time unless ``--jobs`` says more (the default);
- ``ray``: the same children as Ray tasks, each pinned to its own cores (``speechperf[ray]``);
- ``inprocess``: each child's command run inside this process, one after another, for debugging (a breakpoint in
  bench code stops there); its timings share one interpreter, so they are not measurements.

Every executor gets the same children (``ChildRun``: a cell, a run number, its bench arguments and folder) and calls
``record`` with one ``RunResult`` per child as it finishes (or the one ``skip`` gives in place of launching it); progress lines go to the ``speechperf`` logger. Adding
one: a module here with ``run(children, timeout_s, jobs, record, skip=None)`` and ``check(jobs)``, and a line in ``EXECUTORS`` (see docs/architecture.md, "Where to add things").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from speechperf.compare.child import ChildRun, RunResult, Skip
from speechperf.compare.executors import inprocess, local, ray
from speechperf.errors import SpeechperfError


class Executor(Protocol):
    """What an executor module defines."""

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


def get_executor(name: str, jobs: int = 1) -> Executor:
    """Executor ``name``, checked to be able to run ``jobs`` children at once here."""
    if name not in EXECUTORS:
        raise SpeechperfError(f"--executor {name!r}: allowed: {', '.join(EXECUTORS)}")
    EXECUTORS[name].check(jobs)
    return EXECUTORS[name]
