"""``speechperf compare``: one config on several backends, thread counts or presets, each run in its own process,
ranked with statistics, with the outputs checked against each other."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from speechperf.cli.config_options import config_from_options, config_options, config_overrides
from speechperf.cli.options import (
    FiniteFloatRange,
    budget_option,
    export_options,
    instances_option,
    keep_options,
    launch_options,
    mlperf_conf_options,
    scenario_option,
    scenario_run_options,
    seed_option,
    thread_counts_option,
)
from speechperf.compare.best import DEFAULT_BUDGET_S, DEFAULT_SEARCH_RUNS
from speechperf.config.schema import METERS
from speechperf.values import RUNS_MAX

if TYPE_CHECKING:
    from speechperf.compare.run import CompareOptions


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
@thread_counts_option("1", help="Thread counts; every backend runs at each, pinned and recorded the same.")
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
@launch_options()
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
@export_options("JSON with every raw timing per cell and run, rewritten after each child.")
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
@mlperf_conf_options()
def compare(**params) -> None:
    """Run one benchmark config on several backends, each in its own fresh process, and rank them.

    Runs are interleaved (A B C A B C ...), one child at a time; the ranking's unit is one run (its mean
    per-sample runtime), so --runs is the n of the statistics. Exit codes: 0 every run finished and the outputs
    agree; 1 a child failed (crash, signal, timeout: the others are still reported and written) or a cell's outputs
    differ from its group's first (parity MISMATCH); 2 bad input; 130 interrupted. With --scenario: one
    `speechperf loadgen` child per cell, ranked by the scenario's figure (docs/compare.md).
    """
    from speechperf.compare.run import run_compare

    sys.exit(run_compare(compare_options(click.get_current_context(), params)))


def compare_options(ctx: click.Context, p: dict[str, Any]) -> CompareOptions:
    """The command line as ``run_compare`` takes it, checked: bad input is one line (exit 2) before any child."""
    from speechperf.cli.compare_scenario import check_scenario_use, scenario_options
    from speechperf.compare import plan
    from speechperf.compare.run import BestOptions, CompareOptions
    from speechperf.launch.lists import backend_names

    check_scenario_use(ctx, p["scenario"])
    backends = backend_names(p["backends_text"])
    threads = list(p["threads"])
    serving = None if p["scenario"] is None else scenario_options(ctx.params, threads)
    sweeps = [plan.parse_sweep(item) for item in p["sweeps"]]
    overrides = config_overrides(p, warmup=p["warmup"], repeat=p["repeat"], seed=p["seed"], meters=p["meters"])
    base = config_from_options(p["config_path"], dict(overrides), p["preset"], p["sets"])  # bad config: exit 2
    if p["best"]:
        from speechperf.compare.best import check_best

        check_best(sweeps, base.general.warmup)
    return CompareOptions(
        base=base,
        cells=tuple(_cells(p, backends, threads, sweeps, overrides, len(base.stages), serving is not None)),
        backends=tuple(backends),
        threads=tuple(threads),
        config_path=p["config_path"],
        preset=p["preset"],
        sets=tuple(p["sets"]),
        args=_passthrough(overrides),
        runs=p["runs"],
        executor=p["executor"],
        jobs=p["jobs"],
        timeout_s=p["timeout_s"],
        workdir=p["workdir"],
        exports=p["exports"],
        plot=p["plot_path"],
        best=BestOptions(runs=p["best_runs"], budget_s=p["best_budget"]) if p["best"] else None,
        serving=serving,
        options=_given(p),
    )


def _cells(p: dict[str, Any], backends, threads, sweeps, overrides: dict, stage_count: int, serving: bool) -> list:
    """The plan's cells, each one's config checked; with --scenario, the loadgen children's cells, which take the
    config's options, and warmup and seed as the config keys loadgen reads."""
    from speechperf.compare import plan

    source = {"config": p["config_path"], "preset": p["preset"]}
    cells = plan.build_cells(
        backends, threads, sweeps, **source, sets=p["sets"], args=_passthrough(overrides), stage_count=stage_count
    )
    for cell in cells:
        config_from_options(p["config_path"], dict(overrides), cell.preset, cell.sets)
    if not serving:
        return cells
    keys = [f"general.{k}={p[k]}" for k in ("warmup", "seed") if p[k] is not None]
    args = _passthrough(config_overrides(p))
    return plan.build_cells(backends, threads, [], **source, sets=(*p["sets"], *keys), args=args)


def _given(p: dict[str, Any]) -> dict[str, Any]:
    """The command's options as the document keeps them: paths as text, the store and --html by name."""
    e = p["exports"]
    paths = {"output": e.json, "csv_path": e.csv, "md_path": e.markdown, "store": e.keep.store, "html": e.keep.html}
    given = {**{k: v for k, v in p.items() if k != "exports"}, **paths}
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in given.items()}


def _passthrough(overrides: dict) -> tuple[str, ...]:
    """The command line's general overrides as bench options for the children."""
    args: list[str] = []
    for key, value in overrides.items():
        if value is None or value is False:
            continue
        flag = "--unsafe-pickle-runs-code" if key == "unsafe_pickle_runs_code" else "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return tuple(args)
