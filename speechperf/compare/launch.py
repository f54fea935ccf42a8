"""Run the cells' ``speechperf bench`` child processes, interleaved, and say why a child failed.

Every run is a fresh process (``python -m speechperf bench ... --output run.json --save-outputs outputs.npz``), so
no run inherits another's imports, allocator state or thread pools. The order is interleaved, run 1 of A B C, then
run 2 of A B C, ..., so that a drift of the machine (thermal, another program) hits every cell alike. One child runs
at a time unless ``jobs`` > 1: two measured children sharing cores slow each other down.

A child that crashes, is killed (SIGKILL: out of memory, or a user), segfaults, exits non-zero or runs past the
timeout is recorded as failed with its reason and exit code (128 + signal number for a signal, as a shell reports
it); the other runs go on. After each child, ``runs.json`` in the work folder is rewritten atomically.
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
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import IO

import attrs

from speechperf.compare.plan import Cell
from speechperf.errors import SpeechperfError

EXECUTORS = ("local", "ray")
_SIGNAL_REASONS = {
    "SIGKILL": "killed by SIGKILL (out of memory or killed)",
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted (SIGABRT)",
    "SIGBUS": "bus error",
    "SIGTERM": "terminated (SIGTERM)",
}


@attrs.frozen
class RunResult:
    """One child run of one cell. ``run`` counts from 0; ``exit_code`` is 128 + N for signal N."""

    label: str
    run: int
    ok: bool
    exit_code: int | None
    signal: str | None
    reason: str | None  # why it failed; None when ok
    json_path: str
    outputs_path: str
    stderr_path: str
    pid: int | None = None
    wall_s: float | None = None
    cpu_s: float | None = None  # the child's user + system CPU time
    max_rss_mib: float | None = None  # the child's peak RSS over its whole life (import, build, measure)
    cores: tuple[int, ...] | None = None  # the CPUs the child may run on (its affinity mask when it started)
    node: str | None = None

    def to_dict(self) -> dict:
        return attrs.asdict(self)


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


def run_child(
    command: Sequence[str],
    run_dir: Path,
    label: str,
    run: int,
    timeout_s: float | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RunResult:
    """Run ``command`` (``child_command(...)``) in ``run_dir``'s files, wait for it (killing its process group at
    ``timeout_s``) and classify how it ended."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = run_dir / "stderr.txt"
    timed_out = threading.Event()
    with open(run_dir / "stdout.txt", "wb") as out, open(stderr_path, "wb") as err:
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
            timer = threading.Timer(timeout_s, lambda: (timed_out.set(), _kill_group(proc.pid)))
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # wait4: the child's own CPU time and peak RSS
        except BaseException:
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
        reason = f"exit {code}: {_last_line(stderr_path)}"
    elif not _complete(json_path):
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
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return "(no stderr)"
    lines = [line for line in lines if line]
    return lines[-1] if lines else "(no stderr)"


def _complete(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("complete") is True
    except (OSError, ValueError):
        return False


def _not_run(label: str, run: int, run_dir: Path, because: str) -> RunResult:
    """A run that was not launched because an earlier child was refused its input (exit 2)."""
    return RunResult(
        label=label,
        run=run,
        ok=False,
        exit_code=2,
        signal=None,
        reason=f"not run: an earlier run exited 2 ({because})",
        json_path=str(run_dir / "run.json"),
        outputs_path=str(run_dir / "outputs.npz"),
        stderr_path=str(run_dir / "stderr.txt"),
    )


def run_dir_of(workdir: Path, cell: Cell, run: int) -> Path:
    return Path(workdir) / f"run{run + 1}" / cell.slug


def run_cells(
    cells: Sequence[Cell],
    runs: int,
    workdir: Path,
    executor: str = "local",
    timeout_s: float | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    jobs: int = 1,
    err: IO[str] | None = None,
    bad_input_stops: str = "cell",
) -> list[RunResult]:
    """Run every cell ``runs`` times, interleaved; returns the results in (run, cell) order.

    ``on_result`` is called as each child finishes (in finishing order); ``runs.json`` in ``workdir`` is rewritten
    then too. ``jobs`` > 1 runs that many children at once (a warning says the timings then share the machine).
    A child that exits 2 was refused its input, which every later run would be refused too: the cell's remaining
    runs (``bad_input_stops="cell"``) or every remaining run (``"all"``: cells made from one config, as optimize's)
    are not launched, and are recorded as failed with that child's line.
    """
    err = err or sys.stderr
    if executor not in EXECUTORS:
        raise SpeechperfError(f"--executor {executor!r}: allowed: {', '.join(EXECUTORS)}")
    if runs < 1 or jobs < 1:
        raise SpeechperfError(f"runs and jobs must be at least 1, got runs={runs}, jobs={jobs}")
    labels = [c.label for c in cells]
    if len(set(labels)) != len(labels):
        raise SpeechperfError(f"two cells have the label {next(x for x in labels if labels.count(x) > 1)!r}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    order = [(run, cell) for run in range(runs) for cell in cells]
    for cell in cells:  # write config files of dict cells once, before any child runs
        cell.bench_args(workdir)
    if jobs > 1:
        print(
            f"warning: --jobs {jobs} runs {jobs} measured children at once; they share the machine's cores and "
            "memory bandwidth, so their timings are slower and noisier than one at a time",
            file=err,
            flush=True,
        )
    done: list[RunResult] = []
    lock = threading.Lock()
    refused: dict[str, str] = {}  # cell label (or "*" for all) -> the exit-2 line that stops its runs

    def record(result: RunResult) -> None:
        with lock:
            done.append(result)
            if result.exit_code == 2 and result.signal is None and not result.reason.startswith("not run"):
                refused["*" if bad_input_stops == "all" else result.label] = result.reason
                which = "no further run" if bad_input_stops == "all" else f"no further run of {result.label}"
                print(f"compare: {result.label}: bad input, {which} is launched: {result.reason}", file=err, flush=True)
            from speechperf.benchmark.report import write_json_atomic

            write_json_atomic(workdir / "runs.json", {"runs": [r.to_dict() for r in done]})
            status = "ok" if result.ok else f"FAILED: {result.reason} (exit code {result.exit_code})"
            print(f"compare: {result.label} run {result.run + 1}: {status}", file=err, flush=True)
            if on_result is not None:
                on_result(result)

    if executor == "ray":
        from speechperf.compare.ray_executor import run_on_ray

        run_on_ray(order, workdir, timeout_s, jobs, record, err)
    else:

        def one(index: int, run: int, cell: Cell) -> RunResult:
            def started(pid: int) -> None:
                print(
                    f"compare: [{index + 1}/{len(order)}] {cell.label} run {run + 1}: started pid {pid}",
                    file=err,
                    flush=True,
                )

            run_dir = run_dir_of(workdir, cell, run)
            stop = refused.get("*") or refused.get(cell.label)
            if stop is not None:
                return _not_run(cell.label, run, run_dir, stop)
            return run_child(
                child_command(cell.bench_args(workdir), run_dir), run_dir, cell.label, run, timeout_s, started
            )

        if jobs == 1:
            for index, (run, cell) in enumerate(order):
                record(one(index, run, cell))
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(one, i, run, cell) for i, (run, cell) in enumerate(order)]
                for future in as_completed(futures):
                    record(future.result())
    position = {c.label: i for i, c in enumerate(cells)}
    return sorted(done, key=lambda r: (r.run, position[r.label]))
