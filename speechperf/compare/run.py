"""``speechperf compare``'s run, below the command line: ``speechperf.cli.compare_cmd`` parses the options into a
``CompareOptions`` and calls ``run_compare``, which does the rest:

- the checks before any child (every export, the plot, the executor, the work folder, each backend's files);
- with ``--best``, the search over each backend's variants (``speechperf.compare.best``);
- the children (``speechperf.launch.launcher``; with ``--scenario`` the loadgen children of
  ``speechperf.compare.serving``), the result document rewritten as each finishes (``compare``, ``compare-best``
  or ``serving``, docs/results.md), Ctrl-C keeping every export of what was measured;
- the console's report, the plots, then the exports: JSON, CSV, Markdown, the HTML page and the store, all through
  ``speechperf.exports``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.compare import best as best_search
from speechperf.compare.best import DEFAULT_BUDGET_S, DEFAULT_SEARCH_RUNS, SEARCH_COLUMNS, BestSearch
from speechperf.compare.report import COLUMNS, CompareReport, document, render, sentences
from speechperf.compare.serving import ServingOptions, ServingRow
from speechperf.config.schema import BenchConfig
from speechperf.errors import Interrupted
from speechperf.exports import Exports, to_markdown
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, machine
from speechperf.results.notes import Collected, collect

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
    workdir = _check(options)
    if options.serving is not None:
        return _Serving(options, options.serving, workdir).run()
    return _Compare(options, workdir).run()


def _check(o: CompareOptions) -> Path:
    """Everything that can be refused, before any child runs; returns the work folder."""
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.benchmark.validate import check_config, require_pinned_backends
    from speechperf.cache import cache_dir
    from speechperf.launch.executors import get_executor
    from speechperf.outputs import check_output_folder

    o.exports.check()  # a bad path must not cost the whole comparison
    if o.plot is not None:
        from speechperf.compare.plot import check_plot_path

        check_plot_path(o.plot)
    get_executor(o.executor, o.jobs)  # ray installed, jobs the executor can run
    workdir = check_output_folder(o.workdir or default_workdir(), "--workdir")
    for name in o.backends:  # a derived file is exported and gated on parity here, once; the children reuse it
        check_config(o.base, name)
        config_for_backend(o.base, name, cache_dir())
    require_pinned_backends(o.base, None)
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


#: The columns a reader needs first, on the HTML page (every column is in the details block and the exports).
KEY_COLUMNS = (
    "cell",
    "mean_ms",
    "stdev_ms",
    "p90_ms",
    "rtf",
    "peak_rss_mib",
    "gflops_per_sample",
    "ratio",
    "p_value",
    "parity",
    "quality",
)


def _say(line: str) -> None:
    log.info("compare: %s", line)


def _show(text: str) -> None:
    """The console's report on stdout (looked up at each call: click's test runner swaps it)."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _interrupted(exports: Exports, extra: str = "") -> Interrupted:
    kept = [str(path) for _, path in exports.paths()]
    where = f"what was measured is in {', '.join(kept)}" if kept else ""
    return Interrupted("; ".join(p for p in (where, extra) if p))


def _html_plots(exports: Exports, draw: Callable[[Path], list[Path]], folder: str) -> list[Path]:
    """The plots of the HTML page when --plot did not draw them: into ``folder`` (a temporary one); none without
    matplotlib (an extra), which the page then does without."""
    if exports.keep.html is None:
        return []
    if importlib.util.find_spec("matplotlib") is None:
        log.info("note: the HTML page has no plots: matplotlib is not installed (pip install speechperf[plot])")
        return []
    return draw(Path(folder))


@attrs.define
class _Compare:
    """compare (and compare --best): the state the document is written from as the children finish."""

    o: CompareOptions
    workdir: Path
    cells: list[Cell] = attrs.Factory(list)
    finished: list[RunResult] = attrs.Factory(list)
    report: CompareReport | None = None
    searched: BestSearch | None = None
    got: Collected = attrs.Factory(Collected)
    environment: dict[str, Any] = attrs.Factory(machine)

    @property
    def tolerances(self) -> dict[str, Any]:
        """Each stage's ``tolerance`` key, for the parity of float outputs."""
        return {f"stage{i}": s.tolerance for i, s in enumerate(self.o.base.stages, 1) if s.tolerance}

    @property
    def exports(self) -> Exports:
        return attrs.evolve(self.o.exports, columns=COLUMNS, markdown_text=self.markdown)

    def run(self) -> int:
        self.cells = list(self.o.cells)
        try:
            with collect() as self.got, self.exports.interrupted(self.so_far):
                code = self.measure()
        except KeyboardInterrupt:
            raise _interrupted(self.o.exports) from None
        if self.report is None:  # --best found no winner: the search alone
            self.exports.finish(self.document(True), code, tables=self.search_tables(), title=self.title())
            return code
        return self.finish(code)

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
        self.cells = best_search.winner_cells(
            self.searched, o.threads, config_path=o.config_path, preset=o.preset, sets=o.sets, args=o.args
        )
        if not self.cells:
            _show(self.searched.render())
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
        self.exports.write(self.document(False))

    def so_far(self) -> Document | None:
        """What Ctrl-C keeps: the document as it stands; None before the search or any child finished."""
        return None if self.report is None and self.searched is None else self.document(False)

    def document(self, complete: bool) -> Document:
        """The result document as it stands (no rows yet before the first child finished)."""
        report = self.report or CompareReport.build([], [], self.tolerances)
        doc = document(report, self.o.base.to_dict(), self.o.options, self.o.runs, complete)
        if self.searched is not None:
            doc.body["best"] = self.searched.to_json()
        pinned = pinned_line(self.o.base)
        if pinned:
            doc.body["pinned"] = pinned
        return attrs.evolve(
            doc,
            kind="compare" if self.o.best is None else "compare-best",
            environment=self.environment,
            notes=[*([pinned] if pinned else []), *self.got.notes],
            warnings=[*doc.warnings, *self.got.warnings],
        )

    def markdown(self, doc: Document) -> str:
        text = to_markdown(doc, COLUMNS)
        if self.searched is not None:
            text = f"{text}\n## compare --best: the search\n\n{self.searched.to_markdown()}"
        return text

    def title(self) -> str:
        return f"speechperf compare: {self.o.base.general.model_type}"

    def search_tables(self) -> list[str]:
        from speechperf.store.html import table_html

        if self.searched is None:
            return []
        return [table_html("compare --best: the search", SEARCH_COLUMNS, [r.record() for r in self.searched.rows])]

    def finish(self, code: int) -> int:
        """The console's report, the plots, then every export (the HTML page with the plots, the store)."""
        from speechperf.store.html import table_html

        report = self.report
        assert report is not None
        if self.searched is not None:
            _show(self.searched.render())
        _show(render(report))
        pinned = pinned_line(self.o.base)
        if pinned:
            _show(pinned)
        if self.o.best is None and not self.o.paths_searched and len({c.backend for c in self.cells}) > 1:
            default_paths = best_search.default_paths_note(self.o.exports.keep.store, self.o.base.to_dict())
            _show(default_paths)
            self.got.notes.append(default_paths.removeprefix("note: "))
        doc = self.document(True)
        tables = [
            table_html(f"compare: {self.o.base.general.model_type}", COLUMNS, doc.rows, key=KEY_COLUMNS),
            table_html("Summary", ("summary",), [{"summary": s} for s in sentences(report)]),
            *self.search_tables(),
        ]
        plots = _plot(report, self.o.plot, announce=True) if self.o.plot is not None else []
        with tempfile.TemporaryDirectory(prefix="speechperf-html-") as folder:
            if not plots:
                plots = _html_plots(self.o.exports, lambda f: _plot(report, f / "compare.png", False), folder)
            self.exports.finish(doc, code, tables=tables, images=plots, title=self.title())
        return code


def _plot(report: CompareReport, plot_path: Path, announce: bool) -> list[Path]:
    """compare's plots of ``--plot FILE``: the box plot, FILE.length.png, FILE.scaling.png and FILE.roofline.png
    where there is something to draw; returns the files drawn."""
    from speechperf.compare.length_plot import plot_length_cost
    from speechperf.compare.plot import plot_latency, plot_scaling, scaling_path
    from speechperf.compare.roofline_plot import plot_roofline

    drawn = [plot_latency(report.summaries, plot_path)]
    drawn.append(plot_length_cost(report.summaries, plot_path))  # FILE.length.png beside FILE.png
    if report.scaling:
        drawn.append(plot_scaling(report.scaling, scaling_path(plot_path)))
    roofline = plot_roofline(report.summaries, plot_path)
    if roofline is not None:
        if announce:
            _say(f"roofline plot {roofline}")
        drawn.append(roofline)
    return drawn


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
    rows: list[ServingRow] = attrs.Factory(list)
    got: Collected = attrs.Factory(Collected)
    environment: dict[str, Any] = attrs.Factory(machine)

    @property
    def exports(self) -> Exports:
        from speechperf.compare.serving_report import columns

        return attrs.evolve(self.o.exports, columns=columns(self.scenario))

    def document(self, complete: bool) -> Document:
        from speechperf.compare.serving_report import document

        doc = document(self.rows, self.scenario, self.o.base.to_dict(), self.o.options, complete)
        return attrs.evolve(doc, environment=self.environment, notes=self.got.notes, warnings=self.got.warnings)

    def on_row(self, rows: list[ServingRow]) -> None:
        self.rows[:] = rows
        self.exports.write(self.document(False))

    def run(self) -> int:
        """Exit 0 when every child finished, 1 when one failed (its row says why); on Ctrl-C the exports keep the
        rows so far, the interrupted child's partial one included."""
        from speechperf.compare.serving import run_serving
        from speechperf.compare.serving_report import render

        n = len(self.o.cells)
        _say(f"{n} cell(s), scenario {self.scenario.scenario}, one loadgen child at a time")
        _say(f"work folder {self.workdir}")
        try:
            with collect() as self.got, self.exports.interrupted(lambda: self.document(False)):
                probe = LoadProbe().start()
                done = run_serving(
                    self.o.cells, self.scenario, self.workdir, timeout_s=self.o.timeout_s, on_row=self.on_row
                )
                self.environment["load"] = probe.stop()
        except KeyboardInterrupt:
            raise _interrupted(self.o.exports, f"LoadGen's logs are in {self.workdir}") from None
        self.rows[:] = done
        _show(render(done, self.scenario))
        code = 0 if all(r.ok for r in done) else 1
        self.finish(code)
        return code

    def finish(self, code: int) -> None:
        from speechperf.compare.plot import plot_percentiles
        from speechperf.compare.serving_report import columns
        from speechperf.store.html import table_html

        doc = self.document(True)
        title = f"speechperf compare --scenario {self.scenario.scenario}: {self.o.base.general.model_type}"
        tables = [table_html(title, columns(self.scenario), doc.rows)]
        with tempfile.TemporaryDirectory(prefix="speechperf-html-") as folder:

            def draw(where: Path) -> list[Path]:
                drawn = plot_percentiles(self.rows, where / "percentiles.png", title=f"{title}: latency percentiles")
                return [drawn] if drawn is not None else []

            plots = _html_plots(self.o.exports, draw, folder)
            self.exports.finish(doc, code, tables=tables, images=plots, title=title)
