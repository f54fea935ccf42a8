"""``speechperf diff BASE.json NEW.json``: per stage, cell, variant or scenario, new against base, and a regression
gate for CI, on two result documents of one kind (bench, compare, compare-best, optimize, loadgen, serving).

Exit codes: 0 no significant regression (or no ``--fail-above`` given; a timing figure with one process run on a
side is never tested, so never 1 without ``--sample-level``; a time or rate of two sides timed under different
loads, or of a side that waited for a CPU, is not gated without ``--gate-under-load``); 1 a regression of
``--fail-metric`` above ``--fail-above`` (for a time, the lower 95% bound of its ratio over the process runs, with
the between-session ``--drift``, above it); 2 bad input (unreadable or foreign JSON, a newer ``schema_version``, two
documents of different kinds or of a kind with no figure to gate, runs that differ in config, inputs, threads or
machine without ``--allow-different``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from speechperf.cli.options import export_options, keep_options, wide_option
from speechperf.regression import METRICS


@click.command()
@click.argument("base_path", metavar="BASE.json", type=click.Path(dir_okay=False))
@click.argument("new_path", metavar="NEW.json", type=click.Path(dir_okay=False))
@click.option(
    "--fail-above",
    default=None,
    metavar="PCT",
    help="Exit 1 when --fail-metric of a stage, cell, variant or scenario got worse by more than this (5% or 0.05); "
    "for the timing metrics, even at the lower 95% confidence bound of the ratio over the process runs (2 or more "
    "per side), with --drift; for a rate (samples_per_s, peak_qps, completed_qps) worse is lower.",
)
@click.option(
    "--fail-metric",
    type=click.Choice(METRICS),
    default="headline",
    show_default=True,
    help="The figure the gate watches; headline: the mean runtime for bench, compare and optimize, each scenario's "
    "own figure for loadgen and serving (Server peak: peak_qps; Offline: samples_per_s; SingleStream: p90; "
    "MultiStream, Server: p99).",
)
@click.option(
    "--allow-different",
    is_flag=True,
    help="Compare runs whose config, inputs, threads or machine differ (each difference is still warned about).",
)
@click.option(
    "--sample-level",
    is_flag=True,
    help="Test over every per-sample runtime instead of over process runs: samples of one process are not "
    "independent (they share its allocator, threads and the machine's load at the time), so this test can call "
    "noise significant; for a single process per side only.",
)
@click.option(
    "--gate-under-load",
    is_flag=True,
    help="Gate times and rates even when BASE and NEW timed under different loads or a side waited for a CPU (warned "
    "about); without it such a figure that got worse is 'not gated': it may be the machine's, not the code's.",
)
@click.option(
    "--drift",
    default=None,
    metavar="PCT",
    help="How far the same runs move between two sessions, per side (a relative standard deviation; default 3%, "
    "measured on a loaded 2-core machine): the gate's lower bound allows for it, as the runs of one side, run back "
    "to back, cannot show it. 0 trusts the runs' spread alone.",
)
@wide_option("every column (the timing kinds: the median, p90, peak RSS and WER ratios)")
@export_options("JSON export: a diff document, a row per stage, cell, variant or scenario (docs/results.md).")
@keep_options("diff")
def diff(
    base_path, new_path, fail_above, fail_metric, allow_different, sample_level, gate_under_load, drift, wide, exports
) -> None:
    """Compare NEW.json against BASE.json: two result documents of one kind (docs/results.md)."""
    from speechperf.regression import DiffOptions, run_diff

    options = DiffOptions(
        base_path=Path(base_path),
        new_path=Path(new_path),
        fail_above=fail_above,
        fail_metric=fail_metric,
        allow_different=allow_different,
        sample_level=sample_level,
        gate_under_load=gate_under_load,
        drift=drift,
        exports=exports,
        wide=wide,
    )
    sys.exit(run_diff(options))
