"""``speechperf compare``: one config on several backends, thread counts or presets, each run in its own process,
ranked with statistics, with the outputs checked against each other."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from speechperf.cli.config_options import config_from_options, config_options
from speechperf.cli.options import FiniteFloatRange
from speechperf.compare.executors import EXECUTORS, get_executor
from speechperf.config.schema import METERS


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
    type=click.IntRange(min=1),
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
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Children at once; more than 1 makes them share cores (a warning says so).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=FiniteFloatRange(min=0, min_open=True),
    default=None,
    help="Seconds after which a child is killed and reported as timed out.",
)
@click.option("--warmup", type=click.IntRange(min=0), default=None, help="Untimed forwards per stage before timing.")
@click.option("--repeat", type=click.IntRange(min=1), default=None, help="Timed forwards per sample.")
@click.option("--seed", type=click.IntRange(min=0), default=None)
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
@_path_option("--plot", "plot_path", help="Box plot of the per-sample latency per cell (.png or .svg).")
def compare(
    backends_text,
    config_path,
    model_type,
    sets,
    preset,
    dataset_path,
    dataset_type,
    dataset_size,
    allow_pickle,
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
) -> None:
    """Run one benchmark config on several backends, each in its own fresh process, and rank them.

    Runs are interleaved (A B C A B C ...), one child at a time; the ranking's unit is one run (its mean
    per-sample runtime), so --runs is the n of the statistics. Exit codes: 0 every run finished; 1 a child failed
    (crash, signal, timeout: the others are still reported and written); 2 bad input; 130 interrupted.
    """
    from speechperf.compare import plan
    from speechperf.registry import known_backends

    known = known_backends()
    backends = plan.split_list(backends_text, "--backends") if backends_text else known
    unknown = [b for b in backends if b not in known]
    if unknown:
        raise plan.PlanError(f"--backends: unknown backend {unknown[0]!r}; known backends: {', '.join(known)}")
    threads = plan.parse_threads(threads_text)
    sweep_items = [plan.parse_sweep(item) for item in sweeps]
    from speechperf.outputs import check_output_path, write_text_atomic

    for what, path in (("--output", output), ("--csv", csv_path), ("--markdown", md_path)):
        if path is not None:  # before any child runs: a bad path must not cost the whole comparison
            check_output_path(path, what)
    if plot_path is not None:
        from speechperf.compare.plot import check_plot_path

        check_plot_path(plot_path)
    get_executor(executor, jobs)  # ray installed, jobs the executor can run: before any work
    overrides = dict(
        model_type=model_type,
        dataset_path=dataset_path,
        dataset_type=dataset_type,
        dataset_size=dataset_size,
        unsafe_pickle_runs_code=allow_pickle,
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
    for cell in cells:
        config_from_options(config_path, dict(overrides), cell.preset, cell.sets)
    _check_backend_files(base, backends)

    from speechperf.compare.launch import RunResult, run_cells
    from speechperf.compare.report import CompareReport, render, to_csv, to_json, to_markdown

    workdir = workdir or _default_workdir()
    options = {k: (str(v) if isinstance(v, Path) else v) for k, v in click.get_current_context().params.items()}
    config = base.to_dict()
    tolerances = {f"stage{i}": s.tolerance for i, s in enumerate(base.stages, 1) if s.tolerance}
    finished: list[RunResult] = []
    print(
        f"compare: {len(cells)} cell(s) x {runs} run(s), one child at a time"
        if jobs == 1
        else f"compare: {len(cells)} cell(s) x {runs} run(s), {jobs} children at a time",
        file=sys.stderr,
    )
    print(f"compare: work folder {workdir}", file=sys.stderr)

    def write(complete: bool):
        report = CompareReport.build(cells, finished, tolerances)
        if output is not None:
            from speechperf.benchmark.report import write_json_atomic

            write_json_atomic(output, to_json(report, config, options, runs, complete))
        return report

    def on_result(result):
        finished.append(result)
        write(complete=False)

    results = run_cells(cells, runs, workdir, executor=executor, timeout_s=timeout_s, on_result=on_result, jobs=jobs)
    finished[:] = results
    report = write(complete=True)
    if csv_path is not None:
        write_text_atomic(csv_path, to_csv(report), "--csv")
    if md_path is not None:
        write_text_atomic(md_path, to_markdown(report), "--markdown")
    click.echo(render(report), nl=False)
    if plot_path is not None:
        from speechperf.compare.plot import plot_latency

        plot_latency(report.summaries, plot_path)
    sys.exit(1 if report.failed else 0)


def _check_backend_files(base, backends) -> None:
    """Each backend's file of every ``path`` stage, before any child runs: a backend without one is one line, and
    a derived file is exported and gated on parity here once (the children then take it from the cache)."""
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.benchmark.validate import check_config
    from speechperf.cache import cache_dir

    for name in backends:
        check_config(base, name)
        config_for_backend(base, name, cache_dir())


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
