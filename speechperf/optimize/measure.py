"""Measuring fp32 and its variants with ``speechperf compare``'s launcher: every run a fresh ``speechperf bench``
process over the variant's config, interleaved (fp32, A, B, fp32, A, B, ...) so that a drift of the machine falls
on every variant alike; a child that crashes, is killed or times out is recorded with its reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs


@attrs.frozen
class Cell:
    """One thing to measure: a name, the bench config that runs it, its backend and threads."""

    name: str
    config: Path
    backend: str
    threads: int = 1


@attrs.frozen
class RunResult:
    """One child process: its bench JSON (None when it wrote none) and, on failure, why in one line."""

    cell: str
    index: int
    returncode: int | None
    data: dict | None
    error: str = ""
    outputs_path: str | None = None  # every stage output per sample, as `bench --save-outputs` wrote them

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def total(self) -> dict | None:
        """The ``total`` row of the bench summary (runtime mean in ms, peak RSS in MiB, ...)."""
        if not self.data:
            return None
        return next((r for r in self.data.get("summary", []) if r.get("stage") == "total"), None)


def measure(
    cells: Sequence[Cell],
    runs: int,
    workdir: Path,
    timeout_s: float | None = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """``runs`` interleaved rounds over ``cells``, one fresh process per cell per round."""
    from speechperf.compare import launch
    from speechperf.compare.plan import Cell as LaunchCell

    def view(result) -> RunResult:
        path = Path(result.json_path)
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        return RunResult(
            result.label,
            result.run,
            result.exit_code,
            data,
            "" if result.ok else result.reason or "",
            result.outputs_path,
        )

    def report(result) -> None:
        if on_result is not None:
            on_result(view(result))

    launch_cells = [
        LaunchCell(label=c.name, backend=c.backend, threads=c.threads, config=c.config, args=("--quiet",))
        for c in cells
    ]
    return [
        view(r)
        for r in launch.run_cells(
            launch_cells, runs, Path(workdir), timeout_s=timeout_s, on_result=report, bad_input_stops="all"
        )
    ]
