"""``--executor local``: the children as processes on this machine, one at a time unless ``jobs`` > 1."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from speechperf.launch.child import ChildRun, Skip, child_command, run_child
from speechperf.launch.result import RunResult

log = logging.getLogger(__name__)

SUMMARY = "child processes here"


def check(jobs: int) -> None:
    """Anything goes: two measured children sharing cores is warned about by the launcher."""


def run(
    children: Sequence[ChildRun],
    timeout_s: float | None,
    jobs: int,
    record: Callable[[RunResult], None],
    skip: Skip = None,
) -> None:
    def one(child: ChildRun) -> RunResult:
        instead = skip(child) if skip is not None else None
        if instead is not None:
            return instead

        def started(pid: int) -> None:
            log.info(
                "compare: [%d/%d] %s run %d: started pid %d",
                child.index + 1,
                child.total,
                child.cell.label,
                child.run + 1,
                pid,
            )

        command = child_command(child.argv, child.run_dir)
        return run_child(command, child.run_dir, child.cell.label, child.run, timeout_s, started)

    if jobs == 1:
        for child in children:
            record(one(child))
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in as_completed([pool.submit(one, child) for child in children]):
            record(future.result())
