"""Every bench process of a tune, run one at a time within the time budget, and kept so that a rerun resumes.

Each process is a compare cell run once (``speechperf.launch.launcher.run_cells``: a fresh ``speechperf bench``
child, its JSON and outputs in a folder of its own). As it finishes, its ``RunResult`` is appended to
``runs.jsonl`` in the tune's state folder under a key naming what it measured (the candidate, the rung, the run)
and the digest of everything its figures depend on (the config, the search's settings, the machine). A rerun of
the same tune (after Ctrl-C, or to get the answer again) finds the key and reuses the result instead of running
the process again; a changed config, setting or machine changes the digest, and nothing stale is reused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult

log = logging.getLogger(__name__)

LEDGER = "runs.jsonl"
#: Without --timeout, how many times the reference's process time one candidate's process may take (at least
#: MIN_TIMEOUT_S): torch.compile's max-autotune on a large model compiles for many minutes.
SLOWEST = 8.0
MIN_TIMEOUT_S = 180.0


@attrs.define
class Budget:
    """The time budget (seconds) of the whole tune, from its start."""

    seconds: float
    start: float = attrs.Factory(time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    @property
    def left(self) -> float:
        return self.seconds - self.elapsed


def state_digest(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@attrs.define
class Runner:
    """Runs cells within the budget, each result appended to the ledger as it comes, earlier ones reused."""

    folder: Path
    digest: str
    budget: Budget
    timeout_s: float | None = None
    executor: str = "local"
    jobs: int = 1  # processes at once (the Ray executor spreads them over the cluster's nodes)
    known: dict[str, RunResult] = attrs.Factory(dict)
    reused: int = 0
    ran: int = 0
    wall_s: float = 0.0  # summed wall time of the processes this tune ran itself
    #: one whole-dataset process of the reference pipeline (s), once known: without --timeout, a process that
    #: takes SLOWEST times as long (a compile that never ends) is stopped rather than spend the budget
    typical_wall_s: float | None = None
    machine: tuple = attrs.field(init=False, default=(None, None))  # (CPU model, cores) of this machine

    def __attrs_post_init__(self) -> None:
        from speechperf.results.environment import cpu_model

        self.machine = (cpu_model(), os.cpu_count())  # what every candidate must have been timed on
        self.folder.mkdir(parents=True, exist_ok=True)
        ledger = self.folder / LEDGER
        if not ledger.is_file():
            return
        for line in ledger.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                result = RunResult(**entry["result"])
            except (ValueError, TypeError, KeyError):
                continue  # a line torn by a kill: that process runs again
            if entry.get("digest") == self.digest and result.ok and Path(result.json_path).is_file():
                self.known[entry["key"]] = result

    def run(self, cell: Cell, run: int, key: str, min_left_s: float = 0.0, expect_s: float = 0.0) -> RunResult | None:
        """Run ``cell`` once as run ``run`` (from 0); None when what is left of the budget (less ``min_left_s``,
        kept for what comes later) is less than ``expect_s``, the time such a process takes: it would be killed
        before it finished. A result this tune already has under ``key`` is reused."""
        if key in self.known:
            self.reused += 1
            return attrs.evolve(self.known[key], label=cell.label, run=run)
        left = self.budget.left - min_left_s
        if left <= 0 or left < expect_s:
            return None
        (got,) = self._launch([(cell, run, key)], left)
        return got

    def run_many(
        self, items: Sequence[tuple[Cell, int, str]], min_left_s: float = 0.0, expect_s: float = 0.0
    ) -> list[RunResult | None]:
        """``run`` for each (cell, run, key); with ``jobs`` > 1 the ones to run are launched together, ``jobs`` at
        a time (on a Ray cluster: spread over its nodes)."""
        if self.jobs == 1:
            return [self.run(cell, run, key, min_left_s, expect_s) for cell, run, key in items]
        out: list[RunResult | None] = [None] * len(items)
        todo = []
        for i, (cell, run, key) in enumerate(items):
            if key in self.known:
                self.reused += 1
                out[i] = attrs.evolve(self.known[key], label=cell.label, run=run)
            else:
                todo.append(i)
        left = self.budget.left - min_left_s
        if todo and left > 0 and left >= expect_s:
            for i, got in zip(todo, self._launch([items[i] for i in todo], left)):
                out[i] = got
        return out

    def _launch(self, items: Sequence[tuple[Cell, int, str]], left: float) -> list[RunResult]:
        from speechperf.launch.launcher import run_cells

        timeout = self.timeout_s
        if timeout is None and self.typical_wall_s is not None:
            timeout = max(MIN_TIMEOUT_S, SLOWEST * self.typical_wall_s)
        limit = left if timeout is None else min(timeout, left)
        workdir = self.folder / "runs" / state_digest(*(key for _, _, key in items))[:12]
        cells = [cell for cell, _, _ in items]
        done = run_cells(cells, 1, workdir, executor=self.executor, timeout_s=limit, jobs=min(self.jobs, len(cells)))
        by_label = {r.label: r for r in done}
        out = []
        for cell, run, key in items:
            got = attrs.evolve(by_label[cell.label], run=run)
            if not got.ok and (got.reason or "").startswith("timed out") and limit == left:
                reason = f"stopped: it ran past what is left of --budget ({self.budget.seconds:.0f} s)"
                got = attrs.evolve(got, reason=reason)
            got = self._same_machine(got)
            self.ran += 1
            self.wall_s += got.wall_s or 0.0
            if got.ok:  # a failure is tried again by a rerun: killed at the budget, or fixed since
                self.known[key] = got
                line = json.dumps({"key": key, "digest": self.digest, "result": got.to_dict()}) + "\n"
                with open(self.folder / LEDGER, "a", encoding="utf-8") as f:
                    f.write(line)
            out.append(got)
        return out

    def _same_machine(self, got: RunResult) -> RunResult:
        """A run timed on another kind of machine (a cluster node with another CPU) fails: its figures would be
        ranked against this machine's."""
        env = ((bench_json(got) or {}).get("environment") or {}) if got.ok else {}
        there = (env.get("cpu"), env.get("cpu_count"))
        if not got.ok or None in there or there == self.machine:
            return got
        return attrs.evolve(
            got,
            ok=False,
            reason=f"timed on {got.node or 'another node'} ({there[0]}, {there[1]} cores), not a machine like this "
            f"one ({self.machine[0]}, {self.machine[1]} cores): candidates are compared only on one kind of machine",
        )


def bench_json(result: RunResult) -> dict | None:
    try:
        return json.loads(Path(result.json_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stage_figures(result: RunResult, stage: int) -> tuple[float | None, float | None]:
    """(mean seconds per sample, peak RSS MiB) of stage ``stage`` (1-based) in the run's bench JSON."""
    data = bench_json(result)
    try:
        s = data["result"]["stages"][stage - 1]  # type: ignore[index]
    except (TypeError, KeyError, IndexError):
        return None, None
    mean = ((s.get("runtime") or {}).get("stats") or {}).get("mean")
    peak = (s.get("memory") or {}).get("peak_mib")
    return mean, peak
