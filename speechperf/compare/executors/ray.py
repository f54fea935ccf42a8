"""``--executor ray``: the same child runs as Ray tasks, each pinned to its own cores.

Each task asks Ray for ``num_cpus=threads`` and pins its worker process to that many cores with
``os.sched_setaffinity`` before it starts the child (which inherits the mask), then restores the worker's mask.
Ray accounts CPUs but does not hand out core ids, so the cores are chosen by slot: with ``jobs`` children at once,
slot k takes cores ``k*threads .. (k+1)*threads - 1`` of the worker's CPUs, so concurrent children on one node never
share a core. The task sends the child's result files back, so the driver gets them even from another node.
Uses a running Ray (``ray.init`` already called, or ``RAY_ADDRESS``), else starts a local one.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from speechperf.compare.child import ChildRun, RunResult, Skip, child_command, run_child
from speechperf.errors import SpeechperfError

log = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "speechperf[ray]"'


def require_ray():
    try:
        import ray
    except ImportError:
        raise SpeechperfError(f"--executor ray needs the ray package, which is not installed: {INSTALL_HINT}") from None
    return ray


def pinned_cores(slot: int, threads: int, available: list[int]) -> list[int]:
    """The ``threads`` cores of slot ``slot``, wrapping around when the slots need more cores than there are."""
    start = (slot * threads) % len(available)
    return [available[(start + i) % len(available)] for i in range(min(threads, len(available)))]


def check(jobs: int) -> None:
    """Before any child runs: ray must be importable."""
    require_ray()


def _task(argv, run_dir, label, run, timeout_s, threads, slot):
    from speechperf import logs

    logs.configure()  # a Ray worker is a process of its own: its lines reach the driver through its stderr
    original = sorted(os.sched_getaffinity(0))
    cores = pinned_cores(slot, threads, original)
    os.sched_setaffinity(0, cores)
    try:

        def started(pid):
            log.info("compare: %s run %d: started pid %d on cores %s", label, run + 1, pid, cores)

        result = run_child(child_command(argv, Path(run_dir)), Path(run_dir), label, run, timeout_s, started)
    finally:
        os.sched_setaffinity(0, original)
    files = {}
    for path in (result.json_path, result.outputs_path):
        if os.path.exists(path):
            with open(path, "rb") as handle:
                files[path] = handle.read()
    data = result.to_dict()
    data.update(node=socket.gethostname())
    return data, files


def run(
    children: Sequence[ChildRun],
    timeout_s: float | None,
    jobs: int,
    record: Callable[[RunResult], None],
    skip: Skip = None,
) -> None:
    ray = require_ray()
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, include_dashboard=False, log_to_driver=True)
    task = ray.remote(_task)
    log.info("compare: running %d children as Ray tasks, %d at a time", len(children), jobs)
    queue = list(children)
    free_slots = list(range(jobs))
    pending: dict[Any, int] = {}  # Ray's ObjectRef of each running task -> its slot
    while queue or pending:
        while queue and free_slots:
            child = queue.pop(0)
            instead = skip(child) if skip is not None else None
            if instead is not None:
                record(instead)
                continue
            slot = free_slots.pop(0)
            ref = task.options(num_cpus=child.cell.threads).remote(
                list(child.argv), str(child.run_dir), child.cell.label, child.run, timeout_s, child.cell.threads, slot
            )
            pending[ref] = slot
        if not pending:  # every child left in the queue was skipped
            continue
        ready, _ = ray.wait(list(pending), num_returns=1)
        free_slots.append(pending.pop(ready[0]))
        data, files = ray.get(ready[0])
        for path, content in files.items():
            if not os.path.exists(path):  # the task ran on another node
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_bytes(content)
        record(RunResult(**data))
