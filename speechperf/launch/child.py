"""One child run of a cell: the ``speechperf bench`` command line it runs, the process, and how it ended.

Every run is a fresh process (``python -m speechperf bench ... --output run.json --save-outputs outputs.npz``), so
no run inherits another's imports, allocator state or thread pools. A child that crashes, is killed (SIGKILL: out of
memory, or a user), segfaults, exits non-zero or runs past the timeout is recorded as failed with its reason and exit
code (128 + signal number for a signal, as a shell reports it). The executors (``speechperf.launch.executors``)
decide where children run; this module is what every one of them runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.outputs import check_output_path

_SIGNAL_REASONS = {
    "SIGKILL": "killed by SIGKILL (out of memory or killed)",
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted (SIGABRT)",
    "SIGBUS": "bus error",
    "SIGTERM": "terminated (SIGTERM)",
}


#: Given a child about to be launched, the RunResult to record in its place, or None to launch it.
Skip = Callable[["ChildRun"], "RunResult | None"] | None


@attrs.frozen
class ChildRun:
    """One child to run: run ``run`` (from 0) of ``cell``, number ``index`` of ``total`` in the interleaved order."""

    index: int
    total: int
    run: int
    cell: Cell
    argv: tuple[str, ...]  # the bench arguments (``Cell.bench_args``), without --output / --save-outputs
    run_dir: Path


def child_command(argv: Sequence[str], run_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "speechperf",
        *argv,
        "--output",
        str(run_dir / "run.json"),
        "--save-outputs",
        str(run_dir / "outputs.npz"),
    ]


#: What a child's run folder gets besides the bench JSON (which the child's bench checks itself).
RUN_LOGS = ("stdout.txt", "stderr.txt")


def check_run_files(run_dir: Path) -> None:
    """Refuse, before any child runs, a run folder or log file that cannot be written (speechperf.outputs)."""
    for name in RUN_LOGS:
        check_output_path(Path(run_dir) / name, "--workdir")


def run_child(
    command: Sequence[str],
    run_dir: Path,
    label: str,
    run: int,
    timeout_s: float | None = None,
    on_start: Callable[[int], None] | None = None,
    interrupt_grace_s: float | None = None,
) -> RunResult:
    """Run ``command`` (``child_command(...)``) in ``run_dir``'s files, wait for it (killing its process group at
    ``timeout_s``) and classify how it ended. Ctrl-C kills the child's group at once, or, with
    ``interrupt_grace_s``, first sends it SIGINT and waits that long, so that it can write what it measured."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = run_dir / "stderr.txt"
    timed_out = threading.Event()
    with open(run_dir / "stdout.txt", "wb") as out, open(stderr_path, "wb") as err:
        started_at = time.time()
        start = time.perf_counter()
        # A session of its own: the timeout kills everything the child started, and Ctrl-C in the terminal
        # reaches only this process, which then ends the child itself.
        proc = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        try:
            cores = tuple(sorted(os.sched_getaffinity(proc.pid)))  # the mask the child really has
        except OSError:  # it has already exited
            cores = None
        if on_start is not None:
            on_start(proc.pid)
        timer = None
        if timeout_s is not None:

            def kill_on_timeout() -> None:
                timed_out.set()
                _kill_group(proc.pid)

            timer = threading.Timer(timeout_s, kill_on_timeout)
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # wait4: the child's own CPU time and peak RSS
        except BaseException as exc:
            if interrupt_grace_s is not None and isinstance(exc, KeyboardInterrupt):
                _interrupt_group(proc, interrupt_grace_s)
            _kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            if timer is not None:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
    _kill_group(proc.pid)  # anything the child left behind in its group
    code = proc.returncode
    sig = signal.Signals(-code).name if code < 0 else None
    exit_code = 128 - code if code < 0 else code
    json_path = run_dir / "run.json"
    if timed_out.is_set():
        reason = f"timed out after {timeout_s:g} s"
    elif sig is not None:
        reason = _SIGNAL_REASONS.get(sig, f"killed by {sig}")
    elif code != 0:
        reason = f"exit {code}: {last_line(stderr_path)}"
    elif not wrote_complete_json(json_path):
        reason = "exit 0 but no complete result JSON was written"
    else:
        reason = None
    return RunResult(
        label=label,
        run=run,
        ok=reason is None,
        exit_code=exit_code,
        signal=sig,
        reason=reason,
        json_path=str(json_path),
        outputs_path=str(run_dir / "outputs.npz"),
        stderr_path=str(stderr_path),
        pid=proc.pid,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        max_rss_mib=usage.ru_maxrss / 1024,  # ru_maxrss is in KiB on Linux
        cores=cores,
        started_at=started_at,
    )


def _interrupt_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGINT to the child's group (its own session: the terminal's Ctrl-C reached only this process), then wait up
    to ``grace_s`` for it to end; a second Ctrl-C stops the wait."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=grace_s)
    except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired, KeyboardInterrupt):
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def last_line(path: Path) -> str:
    """The last non-empty line of a child's stderr file: what it said when it failed."""
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return "(no stderr)"
    lines = [line for line in lines if line]
    return lines[-1] if lines else "(no stderr)"


def wrote_complete_json(path: Path) -> bool:
    """Whether ``path`` holds a bench result JSON that says it is complete."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("complete") is True
    except (OSError, ValueError):
        return False


def not_run(child: ChildRun, because: str) -> RunResult:
    """A child that was not launched because an earlier child of its cell (or of the run) was refused its input
    (exit 2), which this one would be refused too."""
    return RunResult(
        label=child.cell.label,
        run=child.run,
        ok=False,
        exit_code=2,
        signal=None,
        reason=f"not run: an earlier run exited 2 ({because})",
        json_path=str(child.run_dir / "run.json"),
        outputs_path=str(child.run_dir / "outputs.npz"),
        stderr_path=str(child.run_dir / "stderr.txt"),
    )


def run_dir_of(workdir: Path, cell: Cell, run: int) -> Path:
    """Where run ``run`` of ``cell`` keeps its files: ``<workdir>/run<N>/<cell>/``."""
    return Path(workdir) / f"run{run + 1}" / cell.slug
