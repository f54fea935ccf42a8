"""``--executor inprocess``: each child's command run inside this process, one after another, for debugging.

The child's command line is the same as the local executor's (``speechperf bench ... --output run.json
--save-outputs outputs.npz``); it runs as ``python -m speechperf`` would, through ``runpy``, so a breakpoint or a
debugger stops inside bench code and a failure's traceback is the real one (written to the run's ``stderr.txt``).
Every run shares this interpreter (its imports, allocator state, thread pools), so its timings are not
measurements: a warning says so. No timeout is enforced, and children run one at a time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Sequence

from speechperf.errors import SpeechperfError
from speechperf.launch.child import ChildRun, Skip, child_command, last_line, wrote_complete_json
from speechperf.launch.result import RunResult

log = logging.getLogger(__name__)

SUMMARY = "each child in this process, for debugging (timings not comparable, no timeout)"


def check(jobs: int) -> None:
    if jobs != 1:
        raise SpeechperfError(f"--executor inprocess runs one child at a time; got --jobs {jobs}")


def run(
    children: Sequence[ChildRun],
    timeout_s: float | None,
    jobs: int,
    record: Callable[[RunResult], None],
    skip: Skip = None,
) -> None:
    check(jobs)
    log.warning(
        "warning: --executor inprocess runs every child in this process (for debugging): the runs share imports, "
        "allocators and thread pools, so their timings are not comparable measurements%s",
        "; --timeout is not enforced" if timeout_s is not None else "",
    )
    for child in children:
        instead = skip(child) if skip is not None else None
        record(instead if instead is not None else run_one(child))


def run_one(child: ChildRun) -> RunResult:
    """Run ``child``'s command in this process, its stdout and stderr into the run folder's files."""
    child.run_dir.mkdir(parents=True, exist_ok=True)
    argv = child_command(child.argv, child.run_dir)[3:]  # without "python -m speechperf"
    stderr_path = child.run_dir / "stderr.txt"
    json_path = child.run_dir / "run.json"
    code, reason = 0, None
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    saved_argv = sys.argv
    with open(child.run_dir / "stdout.txt", "w") as out, open(stderr_path, "w") as errors:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(errors):
            sys.argv = ["speechperf", *argv]
            try:
                runpy.run_module("speechperf", run_name="__main__", alter_sys=True)
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
                if not isinstance(done.code, int) and done.code is not None:
                    errors.write(f"{done.code}\n")  # as the interpreter writes a sys.exit message
            except Exception as exc:  # noqa: BLE001 - a child's crash is recorded, as the local executor does
                traceback.print_exc(file=errors)
                code, reason = 1, f"raised {type(exc).__name__}: {exc}"
            finally:
                sys.argv = saved_argv
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    if reason is None and code != 0:
        reason = f"exit {code}: {last_line(stderr_path)}"
    elif reason is None and not wrote_complete_json(json_path):
        reason = "exit 0 but no complete result JSON was written"
    return RunResult(
        label=child.cell.label,
        run=child.run,
        ok=reason is None,
        exit_code=code,
        signal=None,
        reason=reason,
        json_path=str(json_path),
        outputs_path=str(child.run_dir / "outputs.npz"),
        stderr_path=str(stderr_path),
        pid=os.getpid(),
        wall_s=wall,
        cpu_s=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        max_rss_mib=None,  # this process's peak covers every run before this one too
        cores=tuple(sorted(os.sched_getaffinity(0))),
    )
