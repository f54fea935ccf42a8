"""``speechperf compare``'s run, below the command line: ``speechperf.cli.compare_cmd`` parses the options into a
``CompareOptions`` and calls ``run_compare``, which does the rest:

- the checks before any child (every export, the plot, the executor, the work folder, each backend's files);
- with ``--best``, the search over each backend's variants (``speechperf.compare.best``);
- the children (``speechperf.launch.launcher``; with ``--scenario`` the loadgen children of
  ``speechperf.compare.serving``), the result document rewritten as each finishes (``compare``, ``compare-best``
  or ``serving``, docs/results.md);
- all of it inside the command lifecycle (``speechperf.lifecycle``): the notes, Ctrl-C keeping every export of what
  was measured, then the console, the exports, the HTML page and the store, rendered from the document by its
  kind's view (``speechperf.views.compare``, ``speechperf.views.serving``); ``--plot FILE`` drawn from it too.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.compare import best as best_search
from speechperf.compare.best import DEFAULT_BUDGET_S, DEFAULT_SEARCH_RUNS, BestSearch
from speechperf.compare.report import CompareReport, document
from speechperf.compare.serving import ServingOptions, ServingRow
from speechperf.config.schema import BenchConfig
from speechperf.exports import Exports
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.lifecycle import Lifecycle, lifecycle
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, machine

log = logging.getLogger(__name__)


@attrs.frozen
class BestOptions:
    """``--best``: the search's process runs per variant and its time budget, every backend together."""

    runs: int = DEFAULT_SEARCH_RUNS
    budget_s: float = DEFAULT_BUDGET_S


@attrs.frozen
class CompareOptions:
    """One comparison, as the command line asked for it (parsed and checked by ``speechperf.cli.compare_cmd``)."""

    base: BenchConfig  #: the merged config every cell starts from
    cells: tuple[Cell, ...]
    backends: tuple[str, ...]
    threads: tuple[int, ...]
    #: how the cells were made from the config: --best makes its winners' cells the same way
    config_path: Path | None = None
    preset: str | None = None
    sets: tuple[str, ...] = ()
    args: tuple[str, ...] = ()  #: the children's bench options (``--warmup 2``, ...)
    runs: int = 3
    executor: str = "local"
    jobs: int = 1
    timeout_s: float | None = None
    workdir: Path | None = None  #: None: a new folder in the cache
    exports: Exports = Exports()
    plot: Path | None = None
    best: BestOptions | None = None
    serving: ServingOptions | None = None  #: --scenario: rank by a LoadGen scenario instead
    options: dict[str, Any] = attrs.Factory(dict)  #: the command's options as given, kept in the document
    #: the cells are each backend's searched best (speechperf tune): no note that default paths are compared
    paths_searched: bool = False


def run_compare(options: CompareOptions) -> int:
    """Run the comparison; returns the exit code: 0 every run finished (and the outputs agree), 1 a child failed or
    a parity mismatch (or, with --best, no variant passed); Ctrl-C raises ``Interrupted`` after the exports."""
    with lifecycle(options.exports) as run:
        workdir = _check(options)
        if options.serving is not None:
            return _Serving(options, options.serving, workdir, run).run()
        return _Compare(options, workdir, run).run()


def _check(o: CompareOptions) -> Path:
    """Everything that can be refused, before any child runs (the exports are the lifecycle's); returns the work
    folder."""
    from speechperf.benchmark import plan
    from speechperf.cache import cache_dir
    from speechperf.launch.executors import get_executor
    from speechperf.outputs import check_output_folder

    if o.plot is not None:
        from speechperf.views.compare_plots import check_plot_path

        check_plot_path(o.plot)
    get_executor(o.executor, o.jobs)  # ray installed, jobs the executor can run
    workdir = check_output_folder(o.workdir or default_workdir(), "--workdir")
    for name in o.backends:  # a derived file is exported and gated on parity here, once; the children reuse it
        plan.check(o.base, name, cache_dir())
    return workdir


def default_workdir() -> Path:
    from speechperf.cache import cache_dir

    return cache_dir() / "compare" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def pinned_line(base: BenchConfig) -> str | None:
    """The one line that says which stages every cell runs on the same pinned backend, so that only the others
    vary; None when no stage is pinned."""
    pinned = {i: s.backend for i, s in enumerate(base.stages, 1) if s.backend}
    if not pinned:
        return None
    varied = [f"stage{i}" for i in range(1, len(base.stages) + 1) if i not in pinned]
    where = ", ".join(f"stage{i} on {name}" for i, name in pinned.items())
    return (
        f"pinned: {where} in every cell (stageN.backend); only "
        + (", ".join(varied) if varied else "no stage")
        + " vary by backend"
    )


def _say(line: str) -> None:
    log.info("compare: %s", line)


def roofs_json(threads: Sequence[int]) -> dict[str, dict[str, Any] | None]:
    """The roofs cached for this machine at each thread count, as the document keeps them for the roofline plot
    (``speechperf.views.roofline_plot``); None where none are."""
    from speechperf.meters.roofs import cached
    from speechperf.views.roofline_plot import roofs_json as as_json

    out: dict[str, dict[str, Any] | None] = {}
    for n in sorted(set(threads)):
        roofs = cached(n)
        out[str(n)] = (
            None
            if roofs is None
            else as_json(
                roofs.peak.value if roofs.peak else None, roofs.memory.value if roofs.memory else None, roofs.busy
            )
        )
    return out


@attrs.define
class _Compare:
    """compare (and compare --best): the state the document is written from as the children finish."""

    o: CompareOptions
    workdir: Path
    run_: Lifecycle
    cells: list[Cell] = attrs.Factory(list)
    finished: list[RunResult] = attrs.Factory(list)
    report: CompareReport | None = None
    searched: BestSearch | None = None
    environment: dict[str, Any] = attrs.Factory(machine)
    default_paths: str | None = None  #: the note on what a plain compare ranks, once it is finished

    @property
    def tolerances(self) -> dict[str, Any]:
        """Each stage's ``tolerance`` key, for the parity of float outputs."""
        return {f"stage{i}": s.tolerance for i, s in enumerate(self.o.base.stages, 1) if s.tolerance}

    def run(self) -> int:
        self.cells = list(self.o.cells)
        code = self.measure()
        if self.report is not None and self.o.best is None and not self.o.paths_searched:
            if len({c.backend for c in self.cells}) > 1:
                line = best_search.default_paths_note(self.o.exports.keep.store, self.o.base.to_dict())
                self.default_paths = line.removeprefix("note: ")
        doc = self.document()
        code = self.run_.finish(doc, code)
        if self.report is not None and self.o.plot is not None:
            from speechperf.views.compare_plots import draw, roofline_path

            drawn = draw(doc, self.o.plot)
            if roofline_path(self.o.plot) in drawn:
                _say(f"roofline plot {roofline_path(self.o.plot)}")
        return code

    def measure(self) -> int:
        """The search (--best) and the children, the load they ran under recorded; the exit code so far."""
        from speechperf.meters.roofs import measured_once

        _warn_oversubscription(self.o.threads)
        probe = LoadProbe().start()
        # Before any child, so none measures them under the others' load, and once, even where they cannot be
        # trusted (a busy machine): no child measures them again.
        counts = self.o.threads if {"flops", "runtime"} <= set(self.o.base.general.meters) else ()
        with measured_once(counts):
            code = self.search_and_run()
        self.environment["load"] = probe.stop()
        return code

    def search_and_run(self) -> int:
        if self.o.best is not None and not self.search(self.o.best):
            self.report = None
            return 1
        self.announce()
        from speechperf.launch.launcher import run_cells

        done = run_cells(
            self.cells,
            self.o.runs,
            self.workdir,
            executor=self.o.executor,
            timeout_s=self.o.timeout_s,
            on_result=self.on_result,
            jobs=self.o.jobs,
        )
        self.finished[:] = done
        self.report = CompareReport.build(self.cells, self.finished, self.tolerances)
        # A parity mismatch is a failed check, as a failed child is: it must not look like success to a script.
        return 1 if self.report.failed or self.report.mismatched else 0

    def search(self, options: BestOptions) -> bool:
        """compare --best: the search over every backend's variants (at the first thread count); the winners'
        cells replace the plan's. False when no variant of any backend passed."""
        o = self.o
        found = best_search.candidates(
            o.backends, o.threads[0], o.base, config_path=o.config_path, preset=o.preset, sets=o.sets, args=o.args
        )
        log.info(
            "compare --best: %d variant(s) of %d backend(s), budget %.0f s",
            len(found),
            len(o.backends),
            options.budget_s,
        )
        self.searched = best_search.search(
            found,
            runs=options.runs,
            budget_s=options.budget_s,
            workdir=self.workdir / "search",
            executor=o.executor,
            timeout_s=o.timeout_s,
            tolerances=self.tolerances,
        )
        self.run_.write(self.document())  # the search, kept should the winners' runs be interrupted
        self.cells = best_search.winner_cells(
            self.searched, o.threads, config_path=o.config_path, preset=o.preset, sets=o.sets, args=o.args
        )
        if not self.cells:
            log.error("compare --best: no variant of any backend finished with outputs that pass parity")
        return bool(self.cells)

    def announce(self) -> None:
        at_once = "one child at a time" if self.o.jobs == 1 else f"{self.o.jobs} children at a time"
        _say(f"{len(self.cells)} cell(s) x {self.o.runs} run(s), {at_once}")
        _say(f"work folder {self.workdir}")
        if (line := pinned_line(self.o.base)) is not None:
            _say(line)

    def on_result(self, result: RunResult) -> None:
        self.finished.append(result)
        self.report = CompareReport.build(self.cells, self.finished, self.tolerances)
        self.run_.write(self.document())

    def document(self) -> Document:
        """The result document as it stands (no rows yet before the first child finished); the lifecycle marks
        it complete when it finishes."""
        report = self.report or CompareReport.build([], [], self.tolerances)
        doc = document(report, self.o.base.to_dict(), self.o.options, self.o.runs, False)
        doc.body["roofline"]["roofs"] = roofs_json([c.threads for c in report.cells])
        if self.searched is not None:
            doc.body["best"] = self.searched.to_json()
        pinned = pinned_line(self.o.base)
        if pinned:
            doc.body["pinned"] = pinned
        if self.default_paths:
            doc.body["default_paths"] = self.default_paths
        notes = [line for line in (pinned, self.default_paths) if line]
        return attrs.evolve(
            doc,
            kind="compare" if self.o.best is None else "compare-best",
            environment=self.environment,
            notes=notes,
        )


def _warn_oversubscription(threads: Sequence[int]) -> None:
    """A warning when the threads asked for exceed the cores other processes leave free."""
    if max(threads) < 2:
        return
    from speechperf.compare.scaling import oversubscription_warning
    from speechperf.threads import free_cores

    line = oversubscription_warning(threads, free_cores(), os.cpu_count() or 1)
    if line:
        log.warning("%s", line)


@attrs.define
class _Serving:
    """compare --scenario: each cell's loadgen child, the ``serving`` document rewritten after each."""

    o: CompareOptions
    scenario: ServingOptions
    workdir: Path
    run_: Lifecycle
    rows: list[ServingRow] = attrs.Factory(list)
    environment: dict[str, Any] = attrs.Factory(machine)

    def document(self) -> Document:
        from speechperf.compare.serving_report import document

        doc = document(self.rows, self.scenario, self.o.base.to_dict(), self.o.options, False)
        return attrs.evolve(doc, environment=self.environment)

    def on_row(self, rows: list[ServingRow]) -> None:
        self.rows[:] = rows
        self.run_.write(self.document())

    def run(self) -> int:
        """Exit 0 when every child finished, 1 when one failed (its row says why); on Ctrl-C the exports keep the
        rows so far, the interrupted child's partial one included, and LoadGen's logs are where the line says."""
        from speechperf.compare.serving import run_serving

        n = len(self.o.cells)
        _say(f"{n} cell(s), scenario {self.scenario.scenario}, one loadgen child at a time")
        _say(f"work folder {self.workdir}")
        self.run_.interrupted_notes.append(f"LoadGen's logs are in {self.workdir}")
        probe = LoadProbe().start()
        done = run_serving(self.o.cells, self.scenario, self.workdir, timeout_s=self.o.timeout_s, on_row=self.on_row)
        self.environment["load"] = probe.stop()
        self.rows[:] = done
        return self.run_.finish(self.document(), 0 if all(r.ok for r in done) else 1)
