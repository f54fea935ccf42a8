"""``--executor ray``: the same child runs as Ray tasks, each pinned to cores no other task holds.

Each task asks Ray for ``num_cpus=threads``. Ray accounts CPUs but does not hand out core ids, so on its node the
task claims ``threads`` cores of its worker's CPUs by locking one file per core (``fcntl.flock`` on
``<cache>/cores/<core>.lock``; the lock goes with the process holding it, so a killed worker frees its cores), pins
itself to them with ``os.sched_setaffinity`` and starts the child, which inherits the mask. Concurrent tasks on a
node, or on nodes that share one machine's cores, therefore never share a core; a task that finds too few free cores
waits for them (``CLAIM_TIMEOUT_S``), then fails its run in one line.

The child writes into a scratch folder on its node; the task sends back every file of the run (``run.json``,
``outputs.npz``, ``stdout.txt``, ``stderr.txt``) and the driver writes them into the run's folder, so a reason
("exit 2: ...") and the stderr file it cites are the node's real ones even from another machine. A task that fails
itself (its worker killed, an error in the task) is one failed run with the task's error as its reason and in its
``stderr.txt``; the other runs go on, as they do locally. A thread count no node has CPUs for is refused before any
task is submitted (Ray would wait for such a node forever). Uses a running Ray (``ray.init`` already called, or
``RAY_ADDRESS``), else starts a local one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from speechperf.errors import SpeechperfError, decisive_line
from speechperf.launch.child import ChildRun, Skip, child_command, run_child
from speechperf.launch.result import RunResult

log = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "speechperf[ray]"'
SUMMARY = "Ray tasks pinned to their cores (RAY_ADDRESS, or a local Ray; speechperf[ray])"
#: How long a task waits for free cores on its node before its run fails (s): Ray schedules by CPU count, so a
#: wait is normally as short as the end of a task on that node; only a node declaring more CPUs than it lets a
#: worker use runs out for longer.
CLAIM_TIMEOUT_S = 600.0
#: The files of a run that a task sends back to the driver.
SHIPPED = ("run.json", "outputs.npz", "stdout.txt", "stderr.txt")


def require_ray():
    try:
        import ray
    except ImportError:
        raise SpeechperfError(f"--executor ray needs the ray package, which is not installed: {INSTALL_HINT}") from None
    return ray


def check(jobs: int) -> None:
    """Before any child runs: ray must be importable."""
    require_ray()


def cores_folder() -> Path:
    from speechperf.cache import cache_dir

    return cache_dir() / "cores"


@contextlib.contextmanager
def claim_cores(
    threads: int, available: Sequence[int], folder: Path, timeout_s: float = CLAIM_TIMEOUT_S
) -> Iterator[list[int]]:
    """Hold ``threads`` of the ``available`` cores that no other process holds, for the ``with`` block.

    One lock file per core in ``folder``; a core is held while its file is flock-ed by an open descriptor of this
    process, so a process that dies (a worker killed) releases its cores without any cleanup."""
    if threads > len(available):
        raise SpeechperfError(
            f"threads = {threads}: this node lets the task use {len(available)} core(s) ({list(available)})"
        )
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    held: dict[int, int] = {}  # core -> the descriptor holding its lock
    try:
        while len(held) < threads:
            for core in available:
                if core in held or len(held) == threads:
                    continue
                fd = os.open(folder / f"{core}.lock", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # another task holds it
                    os.close(fd)
                    continue
                held[core] = fd
            if len(held) < threads:
                if time.monotonic() > deadline:
                    raise SpeechperfError(
                        f"no {threads} free core(s) among {list(available)} after {timeout_s:g} s: other tasks "
                        f"hold them (locks in {folder})"
                    )
                time.sleep(0.05)
        yield sorted(held)
    finally:
        for fd in held.values():
            os.close(fd)  # closing the descriptor releases its lock


def _task(argv, label, run, timeout_s, threads, cores_dir):
    """One child on this node: claim cores, run it in a scratch folder, send back its files."""
    from speechperf import logs

    logs.configure()  # a Ray worker is a process of its own: its lines reach the driver through its stderr
    scratch = Path(tempfile.mkdtemp(prefix="speechperf-ray-run-"))
    try:
        original = sorted(os.sched_getaffinity(0))
        with claim_cores(threads, original, Path(cores_dir)) as cores:
            os.sched_setaffinity(0, cores)
            try:

                def started(pid):
                    log.info("compare: %s run %d: started pid %d on cores %s", label, run + 1, pid, cores)

                result = run_child(child_command(argv, scratch), scratch, label, run, timeout_s, started)
            finally:
                os.sched_setaffinity(0, original)
        files = {name: (scratch / name).read_bytes() for name in SHIPPED if (scratch / name).is_file()}
        data = result.to_dict()
        data.update(node=socket.gethostname())
        return data, files
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def received(child: ChildRun, data: dict[str, Any], files: dict[str, bytes]) -> RunResult:
    """The task's result, its files written into the run's folder here and its paths pointing at them."""
    child.run_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (child.run_dir / name).write_bytes(content)
    paths = {"json_path": "run.json", "outputs_path": "outputs.npz", "stderr_path": "stderr.txt"}
    data.update({key: str(child.run_dir / name) for key, name in paths.items()})
    return RunResult(**data)


def task_failed(child: ChildRun, exc: BaseException) -> RunResult:
    """A task that failed itself (its worker died, or it raised): one failed run, its error in ``stderr.txt``."""
    reason = f"Ray task failed: {decisive_line(exc)}"
    child.run_dir.mkdir(parents=True, exist_ok=True)
    stderr = child.run_dir / "stderr.txt"
    stderr.write_text(f"{reason}\n\n{exc}\n", encoding="utf-8")
    return RunResult(
        label=child.cell.label,
        run=child.run,
        ok=False,
        exit_code=None,
        signal=None,
        reason=reason,
        json_path=str(child.run_dir / "run.json"),
        outputs_path=str(child.run_dir / "outputs.npz"),
        stderr_path=str(stderr),
    )


def _check_feasible(ray, children: Sequence[ChildRun]) -> None:
    """Refuse, before any task, a thread count that no node has the CPUs for: Ray would wait for one forever."""
    most = max((node.get("Resources", {}).get("CPU", 0) for node in ray.nodes() if node.get("Alive")), default=0)
    wanted = max((child.cell.threads for child in children), default=0)
    if wanted > most:
        raise SpeechperfError(
            f"--threads {wanted}: no node of this Ray cluster has {wanted} CPUs (the most is {most:g}); Ray would "
            "wait for one forever"
        )


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
    _check_feasible(ray, children)
    # max_retries=0: a task whose worker died is one failed run, never a silent second measurement.
    task = ray.remote(max_retries=0)(_task)
    log.info("compare: running %d children as Ray tasks, %d at a time", len(children), jobs)
    queue = list(children)
    pending: dict[Any, ChildRun] = {}  # Ray's ObjectRef of each running task -> its child
    cores_dir = str(cores_folder())
    while queue or pending:
        while queue and len(pending) < jobs:
            child = queue.pop(0)
            instead = skip(child) if skip is not None else None
            if instead is not None:
                record(instead)
                continue
            ref = task.options(num_cpus=child.cell.threads).remote(
                list(child.argv), child.cell.label, child.run, timeout_s, child.cell.threads, cores_dir
            )
            pending[ref] = child
        if not pending:  # every child left in the queue was skipped
            continue
        ready, _ = ray.wait(list(pending), num_returns=1)
        child = pending.pop(ready[0])
        try:
            data, files = ray.get(ready[0])
        except Exception as exc:  # the task re-raised (its worker died, or it failed): this run only
            log.warning("compare: %s run %d: the Ray task failed: %s", child.cell.label, child.run + 1, exc)
            record(task_failed(child, exc))
            continue
        record(received(child, data, files))
