"""Run the cells' ``speechperf bench`` children, interleaved, on an executor, and record each as it finishes.

The order is interleaved, run 1 of A B C, then run 2 of A B C, ..., so that a drift of the machine (thermal, another
program) hits every cell alike. One child runs at a time unless ``jobs`` > 1: two measured children sharing cores
slow each other down. Where the children run is the executor's business (``speechperf.launch.executors``); what a
child is and how its end is classified is ``speechperf.launch.child``'s. A failed child does not stop the others.
After each child, ``runs.json`` in the work folder is rewritten atomically.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from speechperf.benchmark.report import write_json_atomic
from speechperf.errors import SpeechperfError
from speechperf.launch.cell import Cell
from speechperf.launch.child import ChildRun, check_run_files, not_run, run_dir_of
from speechperf.launch.executors import get_executor
from speechperf.launch.result import RunResult
from speechperf.values import check_range

log = logging.getLogger(__name__)


def run_cells(
    cells: Sequence[Cell],
    runs: int,
    workdir: Path,
    executor: str = "local",
    timeout_s: float | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    jobs: int = 1,
    bad_input_stops: str = "cell",
) -> list[RunResult]:
    """Run every cell ``runs`` times, interleaved; returns the results in (run, cell) order.

    ``on_result`` is called as each child finishes (in finishing order); ``runs.json`` in ``workdir`` is rewritten
    then too. ``jobs`` > 1 runs that many children at once (a warning says the timings then share the machine).
    A child that exits 2 was refused its input, which every later run would be refused too: the cell's remaining
    runs (``bad_input_stops="cell"``) or every remaining run (``"all"``: cells made from one config, as optimize's)
    are not launched, and are recorded as failed with that child's line.
    """
    if runs < 1 or jobs < 1:
        raise SpeechperfError(f"runs and jobs must be at least 1, got runs={runs}, jobs={jobs}")
    if timeout_s is not None:  # inf or 1e300 would reach the timer's thread as an OverflowError
        check_range(timeout_s, "timeout", 0, threading.TIMEOUT_MAX)
    run_children = get_executor(executor, jobs)
    labels = [c.label for c in cells]
    if len(set(labels)) != len(labels):
        raise SpeechperfError(f"two cells have the label {next(x for x in labels if labels.count(x) > 1)!r}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for cell in cells:  # each dict cell's config file, once, before any child runs
        cell.write_config(workdir)
    order = [(run, cell) for run in range(runs) for cell in cells]
    children = [
        ChildRun(i, len(order), run, cell, tuple(cell.bench_args(workdir)), run_dir_of(workdir, cell, run))
        for i, (run, cell) in enumerate(order)
    ]
    for child in children:  # before the first child: a FIFO or a folder where a run's logs go would hang or fail it
        check_run_files(child.run_dir)
    if jobs > 1:
        log.warning(
            "warning: --jobs %d runs %d measured children at once; they share the machine's cores and "
            "memory bandwidth, so their timings are slower and noisier than one at a time",
            jobs,
            jobs,
        )
    done: list[RunResult] = []
    refused: dict[str, str] = {}  # cell label (or "*": every cell) -> the line of the child that exited 2
    lock = threading.Lock()

    def record(result: RunResult) -> None:
        with lock:
            done.append(result)
            if result.exit_code == 2 and result.signal is None and not (result.reason or "").startswith("not run"):
                refused["*" if bad_input_stops == "all" else result.label] = result.reason or ""
                which = "no further run" if bad_input_stops == "all" else f"no further run of {result.label}"
                log.warning("compare: %s: bad input, %s is launched: %s", result.label, which, result.reason)
            write_json_atomic(workdir / "runs.json", {"runs": [r.to_dict() for r in done]})
            status = "ok" if result.ok else f"FAILED: {result.reason} (exit code {result.exit_code})"
            log.info("compare: %s run %d: %s", result.label, result.run + 1, status)
            if on_result is not None:
                on_result(result)

    def skip(child: ChildRun) -> RunResult | None:
        stop = refused.get("*") or refused.get(child.cell.label)
        return None if stop is None else not_run(child, stop)

    run_children.run(children, timeout_s, jobs, record, skip)
    position = {c.label: i for i, c in enumerate(cells)}
    return sorted(done, key=lambda r: (r.run, position[r.label]))
