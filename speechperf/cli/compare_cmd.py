"""``speechperf compare``: one config on several backends, thread counts or presets, each run in its own process,
ranked with statistics, with the outputs checked against each other."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import click

from speechperf.cli.config_options import config_from_options, config_options, config_overrides
from speechperf.cli.options import (
    TIMEOUT_MAX,
    FiniteFloatRange,
    budget_option,
    instances_option,
    keep_options,
    scenario_option,
    scenario_run_options,
    seed_option,
)
from speechperf.compare.best import DEFAULT_BUDGET_S, DEFAULT_SEARCH_RUNS
from speechperf.compare.executors import EXECUTORS, get_executor
from speechperf.config.schema import METERS
from speechperf.errors import Interrupted
from speechperf.values import JOBS_MAX, RUNS_MAX

log = logging.getLogger(__name__)


def _path_option(*names, help):
    return click.option(*names, type=click.Path(dir_okay=False, path_type=Path), default=None, help=help)


@click.command()
@click.option(
    "--backends",
    "backends_text",
    default=None,
    metavar="A,B,...",
    help="Comma-separated backends to compare; default: every registered backend.",
)
@config_options(without="the tiny S2T on generated data")
@click.option(
    "--threads",
    "threads_text",
    default="1",
    show_default=True,
    metavar="N[,M...]",
    help="Thread counts; every backend runs at each, pinned and recorded the same.",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1, max=RUNS_MAX),
    default=3,
    show_default=True,
    help="Process runs per cell, interleaved; the statistical unit of the ranking.",
)
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="KEY=V1,V2",
    help="Vary a config key: preset, a general or stage key, or SECTION.KEY (repeatable).",
)
@click.option(
    "--executor",
    type=click.Choice(tuple(EXECUTORS)),
    default="local",
    show_default=True,
    help="local: child processes here; ray: Ray tasks pinned to their cores (speechperf[ray]); "
    "inprocess: each child in this process, for debugging (timings not comparable).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=JOBS_MAX),
    default=1,
    show_default=True,
    help=f"Children at once, at most {JOBS_MAX}; more than 1 makes them share cores (a warning says so).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=FiniteFloatRange(min=0, min_open=True, max=TIMEOUT_MAX),
    default=None,
    help="Seconds after which a child is killed and reported as timed out.",
)
@click.option("--warmup", type=click.IntRange(min=0), default=None, help="Untimed forwards per stage before timing.")
@click.option("--repeat", type=click.IntRange(min=1), default=None, help="Timed forwards per sample.")
@seed_option(None)
@click.option("--meters", default=None, help=f"Comma-separated: {','.join(METERS)}.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where each child writes its JSON, outputs and stderr; default: a new folder in the cache.",
)
@_path_option("--output", "-o", help="JSON with every raw timing per cell and run, rewritten after each child.")
@_path_option("--csv", "csv_path", help="CSV export, one row per cell.")
@_path_option("--markdown", "md_path", help="Markdown export, one row per cell.")
@_path_option(
    "--plot",
    "plot_path",
    help="Box plot of the per-sample latency per cell (.png or .svg); beside it FILE.length.png, runtime against "
    "audio length with the fitted line per cell; with --threads 1,N also FILE.scaling.png, the speed-up over 1 "
    "thread per backend with the ideal line.",
)
@click.option(
    "--best",
    is_flag=True,
    help="Each backend at its best: measure every variant it declares (`speechperf backends`) on the config's "
    "data, drop those failing parity, then compare each backend's fastest.",
)
@click.option(
    "--best-budget",
    "best_budget",
    type=FiniteFloatRange(min=0, min_open=True),
    default=DEFAULT_BUDGET_S,
    show_default=True,
    help="Seconds the --best search may take, every backend together; variants not started by then are not tried.",
)
@click.option(
    "--best-runs",
    "best_runs",
    type=click.IntRange(min=1, max=RUNS_MAX),
    default=DEFAULT_SEARCH_RUNS,
    show_default=True,
    help="Process runs of each variant in the --best search (the winners then get --runs).",
)
@keep_options("comparison (with the plots)")
@scenario_option(
    required=False,
    help="Rank by an MLPerf LoadGen scenario instead (docs/loadgen.md): each backend's `speechperf loadgen` in a "
    "fresh process; Server by peak QPS (a peak search per backend within --budget), Offline by samples/s, "
    "SingleStream and MultiStream by their latency percentile.",
)
@scenario_run_options()
@budget_option(help="With --scenario Server: seconds each backend's peak search may take.")
@instances_option
def compare(
    backends_text,
    threads_text,
    runs,
    sweeps,
    executor,
    jobs,
    timeout_s,
    warmup,
    repeat,
    seed,
    meters,
    workdir,
    output,
    csv_path,
    md_path,
    plot_path,
    best,
    best_budget,
    best_runs,
    keep,
    scenario,
    target_qps,
    target_latency_ms,
    percentile,
    duration,
    min_queries,
    samples_per_query,
    budget,
    instances,
    **config_args,
) -> None:
    """Run one benchmark config on several backends, each in its own fresh process, and rank them.

    Runs are interleaved (A B C A B C ...), one child at a time; the ranking's unit is one run (its mean
    per-sample runtime), so --runs is the n of the statistics. Exit codes: 0 every run finished and the outputs
    agree; 1 a child failed (crash, signal, timeout: the others are still reported and written) or a cell's outputs
    differ from its group's first (parity MISMATCH); 2 bad input; 130 interrupted. With --scenario: one
    `speechperf loadgen` child per cell, ranked by the scenario's figure (docs/compare.md).
    """
    from speechperf.cli.compare_scenario import check_scenario_use
    from speechperf.compare import plan

    ctx = click.get_current_context()
    check_scenario_use(ctx, scenario)
    config_path, preset, sets = config_args["config_path"], config_args["preset"], config_args["sets"]
    from speechperf.registry import known_backends

    known = known_backends()
    backends = known if backends_text is None else plan.split_list(backends_text, "--backends")  # '' is refused
    unknown = [b for b in backends if b not in known]
    if unknown:
        raise plan.PlanError(f"--backends: unknown backend {unknown[0]!r}; known backends: {', '.join(known)}")
    threads = plan.parse_threads(threads_text)
    serving = None
    if scenario is not None:
        from speechperf.cli.compare_scenario import scenario_options

        serving = scenario_options(ctx.params, threads)
    sweep_items = [plan.parse_sweep(item) for item in sweeps]
    from speechperf.outputs import check_output_folder, check_output_path, write_text_atomic

    for what, path in (("--output", output), ("--csv", csv_path), ("--markdown", md_path)):
        if path is not None:  # before any child runs: a bad path must not cost the whole comparison
            check_output_path(path, what)
    if plot_path is not None:
        from speechperf.compare.plot import check_plot_path

        check_plot_path(plot_path)
    keep.check()
    get_executor(executor, jobs)  # ray installed, jobs the executor can run: before any work
    overrides = config_overrides(
        config_args,
        warmup=warmup,
        repeat=repeat,
        seed=seed,
        meters=meters,
    )
    base = config_from_options(config_path, dict(overrides), preset, sets)  # bad config: exit 2 before any child
    args = _passthrough(overrides)
    cells = plan.build_cells(
        backends,
        threads,
        sweep_items,
        config=config_path,
        preset=preset,
        sets=sets,
        args=args,
        stage_count=len(base.stages),
    )
    if best:
        from speechperf.compare.best import check_best

        check_best(sweep_items, base.general.warmup)
    for cell in cells:
        config_from_options(config_path, dict(overrides), cell.preset, cell.sets)
    workdir = check_output_folder(workdir or _default_workdir(), "--workdir")  # before a derived file is exported
    _check_backend_files(base, backends)
    pinned_line = _pinned_line(base)

    from speechperf.benchmark.validate import require_pinned_backends

    require_pinned_backends(base, None)  # every pinned backend installed, before any child runs
    if serving is not None:
        from speechperf.cli.compare_scenario import run_scenario

        # the children take the config's options; warmup and seed as the config keys loadgen reads
        keys = [f"general.{k}={v}" for k, v in (("warmup", warmup), ("seed", seed)) if v is not None]
        cells = plan.build_cells(
            backends,
            threads,
            [],
            config=config_path,
            preset=preset,
            sets=(*sets, *keys),
            args=_passthrough(config_overrides(config_args)),
        )
        options = {k: (str(v) if isinstance(v, Path) else v) for k, v in ctx.params.items()}
        sys.exit(
            run_scenario(
                serving,
                cells,
                workdir,
                config=base.to_dict(),
                options=options,
                output=output,
                csv_path=csv_path,
                md_path=md_path,
                timeout_s=timeout_s,
            )
        )
    _warn_oversubscription(threads)

    from speechperf.compare.launch import RunResult, run_cells
    from speechperf.compare.report import CompareReport, render, to_csv, to_json, to_markdown

    params = {**click.get_current_context().params, "store": keep.store, "html": keep.html}
    options = {k: (str(v) if isinstance(v, Path) else v) for k, v in params.items() if k != "keep"}
    config = base.to_dict()
    tolerances = {f"stage{i}": s.tolerance for i, s in enumerate(base.stages, 1) if s.tolerance}
    finished: list[RunResult] = []
    searched = None
    if best:
        searched, cells = _search_best(
            backends,
            threads,
            base,
            config_path,
            preset,
            sets,
            args,
            best_runs,
            best_budget,
            workdir,
            executor,
            timeout_s,
            tolerances,
        )
    print(
        f"compare: {len(cells)} cell(s) x {runs} run(s), one child at a time"
        if jobs == 1
        else f"compare: {len(cells)} cell(s) x {runs} run(s), {jobs} children at a time",
        file=sys.stderr,
    )
    print(f"compare: work folder {workdir}", file=sys.stderr)
    if pinned_line:
        print(f"compare: {pinned_line}", file=sys.stderr)

    def document(report, complete: bool) -> dict:
        data = to_json(report, config, options, runs, complete)
        if searched is not None:
            data["best"] = searched.to_json()
        return {**data, "pinned": pinned_line} if pinned_line else data

    def write(complete: bool):
        report = CompareReport.build(cells, finished, tolerances)
        if output is not None:
            from speechperf.benchmark.report import write_json_atomic

            write_json_atomic(output, document(report, complete))
        return report

    def on_result(result):
        finished.append(result)
        write(complete=False)

    if {"flops", "runtime"} <= set(base.general.meters):
        from speechperf.meters.roofs import roofs_for

        for n in sorted({c.threads for c in cells}):  # before any child, so that none measures them under load
            roofs_for(n)

    def export(report) -> None:
        if csv_path is not None:
            write_text_atomic(csv_path, to_csv(report), "--csv")
        if md_path is not None:
            text = to_markdown(report)
            if searched is not None:
                text = f"{text}\n## compare --best: the search\n\n{searched.to_markdown()}"
            write_text_atomic(md_path, text, "--markdown")

    try:
        results = run_cells(
            cells, runs, workdir, executor=executor, timeout_s=timeout_s, on_result=on_result, jobs=jobs
        )
    except KeyboardInterrupt:
        # Ctrl-C: the JSON, CSV and Markdown hold every run that finished (the README's promise for exit 130).
        export(write(complete=False))
        kept = [str(p) for p in (output, csv_path, md_path) if p is not None]
        raise Interrupted(f"what was measured is in {', '.join(kept)}" if kept else "") from None
    finished[:] = results
    report = write(complete=True)
    export(report)
    if searched is not None:
        click.echo(searched.render())
    click.echo(render(report), nl=False)
    if pinned_line:
        click.echo(pinned_line)
    code = 1 if report.failed or report.mismatched else 0
    plots = _plot(report, plot_path, announce=True) if plot_path is not None else []
    if keep.html is not None and plot_path is None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="speechperf-html-") as folder:  # the page's plots, drawn for it
            drawn = _plot(report, Path(folder) / "compare.png", announce=False)
            _finish(keep, document(report, True), code, report, drawn)
    else:
        _finish(keep, document(report, True), code, report, plots)
    # A parity mismatch is a failed check, as a failed child is: it must not look like success to a script.
    sys.exit(code)


def _plot(report, plot_path: Path, announce: bool) -> list[Path]:
    """compare's plots of ``--plot FILE``: the box plot, FILE.length.png, FILE.scaling.png and FILE.roofline.png
    where there is something to draw; returns the files drawn."""
    from speechperf.compare.length_plot import plot_length_cost
    from speechperf.compare.plot import plot_latency, plot_roofline, plot_scaling, scaling_path

    drawn = [plot_latency(report.summaries, plot_path)]
    drawn.append(plot_length_cost(report.summaries, plot_path))  # FILE.length.png beside FILE.png
    if report.scaling:
        drawn.append(plot_scaling(report.scaling, scaling_path(plot_path)))
    roofline = plot_roofline(report.summaries, plot_path)
    if roofline is not None:
        if announce:
            print(f"compare: roofline plot {roofline}", file=sys.stderr)
        drawn.append(roofline)
    return drawn


def _finish(keep, doc: dict, code: int, report, plots: list[Path]) -> None:
    """The HTML page and the store, after every export and plot (speechperf.store.keep)."""
    from speechperf.compare.report import COLUMNS, rows
    from speechperf.store.html import table_html

    model = (doc.get("config") or {}).get("general", {}).get("model_type", "")
    tables = [table_html(f"compare: {model}", COLUMNS, rows(report))]
    keep.finish("compare", doc, code, tables=tables, images=plots, title=f"speechperf compare: {model}")


def _search_best(
    backends, threads, base, config_path, preset, sets, args, runs, budget_s, workdir, executor, timeout_s, tolerances
):
    """compare --best: the search over every backend's variants (at the first thread count), and the cells of the
    winners' comparison; no winner at all is exit 1 with the search table printed."""
    from speechperf.compare import best

    found = best.candidates(backends, threads[0], base, config_path=config_path, preset=preset, sets=sets, args=args)
    log.info("compare --best: %d variant(s) of %d backend(s), budget %.0f s", len(found), len(backends), budget_s)
    searched = best.search(
        found,
        runs=runs,
        budget_s=budget_s,
        workdir=Path(workdir) / "search",
        executor=executor,
        timeout_s=timeout_s,
        tolerances=tolerances,
    )
    cells = best.winner_cells(searched, threads, config_path=config_path, preset=preset, sets=sets, args=args)
    if not cells:
        click.echo(searched.render())
        log.error("compare --best: no variant of any backend finished with outputs that pass parity")
        sys.exit(1)
    return searched, cells


def _warn_oversubscription(threads) -> None:
    """A warning when the threads asked for exceed the cores other processes leave free."""
    if max(threads) < 2:
        return
    import os

    from speechperf.compare.scaling import oversubscription_warning
    from speechperf.threads import free_cores

    line = oversubscription_warning(threads, free_cores(), os.cpu_count() or 1)
    if line:
        log.warning("%s", line)


def _check_backend_files(base, backends) -> None:
    """Each backend's file of every ``path`` stage, before any child runs: a backend without one is one line, and
    a derived file is exported and gated on parity here once (the children then take it from the cache)."""
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.benchmark.validate import check_config
    from speechperf.cache import cache_dir

    for name in backends:
        check_config(base, name)
        config_for_backend(base, name, cache_dir())


def _pinned_line(base) -> str | None:
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


def _passthrough(overrides: dict) -> tuple[str, ...]:
    """The command line's general overrides as bench options for the children."""
    args: list[str] = []
    for key, value in overrides.items():
        if value is None or value is False:
            continue
        flag = "--unsafe-pickle-runs-code" if key == "unsafe_pickle_runs_code" else "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return tuple(args)


def _default_workdir() -> Path:
    import os

    from speechperf.cache import cache_dir

    return cache_dir() / "compare" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
