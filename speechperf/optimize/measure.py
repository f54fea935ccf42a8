"""Measuring fp32 and its variants with ``speechperf compare``'s launcher: every run a fresh ``speechperf bench``
process over the variant's config, interleaved (fp32, A, B, fp32, A, B, ...) so that a drift of the machine falls
on every variant alike; a child that crashes, is killed or times out is recorded with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult


def variant_cell(name: str, config: Path, backend: str, threads: int = 1) -> Cell:
    """The compare cell that measures variant ``name``: its bench config on its backend, quietly."""
    return Cell(label=name, backend=backend, threads=threads, config=config, args=("--quiet",))


@attrs.frozen
class VariantRun:
    """One child process of one variant, as optimize reads it: its bench JSON (None when it wrote none) and, on
    failure, why in one line. (compare's RunResult is the process record it is read from.)"""

    cell: str
    index: int
    returncode: int | None
    data: dict | None  #: the child's bench document as current JSON (speechperf.results: rows, result, ...)
    error: str = ""
    outputs_path: str | None = None  # every stage output per sample, as `bench --save-outputs` wrote them

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def total(self) -> dict | None:
        """The ``total`` row of the bench document (``mean_ms``, ``peak_rss_mib``, ...)."""
        if not self.data:
            return None
        return next((r for r in self.data.get("rows") or () if r.get("stage") == "total"), None)


def read_bench(path: Path) -> dict | None:
    """A child's bench JSON, upgraded to the current schema (speechperf.results), or None when it wrote none or
    wrote no readable document (the run's error then says why)."""
    from speechperf.results import DocumentError, read

    if not path.is_file():
        return None
    try:
        return read(path, kinds=("bench",)).to_json()
    except DocumentError:
        return None


def measure(
    cells: Sequence[Cell],
    runs: int,
    workdir: Path,
    timeout_s: float | None = None,
    on_result: Callable[[VariantRun], None] | None = None,
    executor: str = "local",
    jobs: int = 1,
) -> list[VariantRun]:
    """``runs`` interleaved rounds over ``cells`` (``variant_cell``), one fresh process per cell per round."""
    from speechperf.launch import launcher

    def view(result: RunResult) -> VariantRun:
        path = Path(result.json_path)
        data = read_bench(path)
        return VariantRun(
            result.label,
            result.run,
            result.exit_code,
            data,
            "" if result.ok else result.reason or "",
            result.outputs_path,
        )

    def report(result: RunResult) -> None:
        if on_result is not None:
            on_result(view(result))

    # The variants are made from one config: a child refused its input (exit 2) means every one would be.
    return [
        view(r)
        for r in launcher.run_cells(
            cells,
            runs,
            Path(workdir),
            executor=executor,
            timeout_s=timeout_s,
            on_result=report,
            jobs=jobs,
            bad_input_stops="all",
        )
    ]
