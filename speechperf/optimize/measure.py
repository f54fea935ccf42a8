"""Measuring fp32 and its variants: each run a fresh ``speechperf bench --config <variant>.yaml`` process, run
interleaved (fp32, A, B, fp32, A, B, ...) so that drift of the machine falls on every variant alike.

``measure`` is the one place that launches; ``speechperf compare``'s launcher can take its place without anything
else changing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from speechperf.errors import first_line


@attrs.frozen
class Cell:
    """One thing to measure: a name and the bench config that runs it."""

    name: str
    config: Path


@attrs.frozen
class RunResult:
    """One child process: its bench JSON (None when it wrote none) and, on failure, why in one line."""

    cell: str
    index: int
    returncode: int
    data: dict | None
    error: str = ""

    @property
    def total(self) -> dict | None:
        """The ``total`` row of the bench summary (runtime mean in ms, peak RSS in MiB, ...)."""
        if not self.data:
            return None
        return next((r for r in self.data.get("summary", []) if r.get("stage") == "total"), None)


def bench_command(config: Path, output: Path) -> list[str]:
    return [sys.executable, "-m", "speechperf", "bench", "--config", str(config), "--output", str(output), "--quiet"]


def measure(cells: Sequence[Cell], runs: int, workdir: Path, timeout_s: float | None = None,
            on_result: Callable[[RunResult], None] | None = None) -> list[RunResult]:
    """``runs`` rounds over ``cells``, one fresh process per cell per round."""
    results = []
    workdir.mkdir(parents=True, exist_ok=True)
    for index in range(runs):
        for cell in cells:
            output = workdir / f"{cell.name}.run{index + 1}.json"
            output.unlink(missing_ok=True)
            try:
                done = subprocess.run(bench_command(cell.config, output), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, timeout=timeout_s, env=dict(os.environ))
                code, stderr = done.returncode, done.stderr
            except subprocess.TimeoutExpired:
                code, stderr = 124, f"timed out after {timeout_s} s"
            data = json.loads(output.read_text()) if output.exists() else None
            error = "" if code == 0 else _reason(code, stderr)
            result = RunResult(cell.name, index, code, data, error)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results


def _reason(code: int, stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    failed = [line for line in lines if line.startswith(("failed:", "Error:"))]
    text = (failed or lines or [f"exit {code}"])[-1]
    return f"exit {code}: {first_line(Exception(text))}"
