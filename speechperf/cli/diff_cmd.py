"""``speechperf diff BASE.json NEW.json``: per stage, cell, variant or scenario, new against base, and a regression
gate for CI, on two result documents of one kind (bench, compare, compare-best, optimize, loadgen, serving).

Exit codes: 0 no significant regression (or no ``--fail-above`` given; a timing figure with one process run on a
side is never tested, so never 1 without ``--sample-level``; a time or rate of two sides timed under different
loads is not gated without ``--gate-under-load``); 1 a significant regression of ``--fail-metric`` above
``--fail-above`` (significant over the process runs); 2 bad input (unreadable or foreign JSON, a newer ``schema_version``, two
documents of different kinds or of a kind with no figure to gate, runs that differ in config, inputs, threads or
machine without ``--allow-different``).
"""

from __future__ import annotations

import logging
import sys

import click

from speechperf.cli.options import export_options
from speechperf.regression import METRICS

log = logging.getLogger(__name__)


@click.command()
@click.argument("base_path", metavar="BASE.json", type=click.Path(dir_okay=False))
@click.argument("new_path", metavar="NEW.json", type=click.Path(dir_okay=False))
@click.option(
    "--fail-above",
    default=None,
    metavar="PCT",
    help="Exit 1 when --fail-metric of a stage, cell, variant or scenario got worse by more than this (5% or 0.05), "
    "significantly (Welch's p < 0.05 over the process runs: 2 or more per side) for the timing metrics; for a rate "
    "(samples_per_s, peak_qps) worse is lower.",
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
    help="Gate times and rates even when BASE and NEW timed under different loads (warned about); without it such a "
    "figure that got worse is 'not gated (loads differ)': it may be the machine's, not the code's.",
)
@export_options("JSON export: a diff document, a row per stage, cell, variant or scenario (docs/results.md).")
def diff(
    base_path,
    new_path,
    fail_above,
    fail_metric,
    allow_different,
    sample_level,
    gate_under_load,
    output,
    csv_path,
    md_path,
) -> None:
    """Compare NEW.json against BASE.json: two result documents of one kind (docs/results.md)."""
    from speechperf import regression
    from speechperf.exports import Exports

    exports = Exports(json=output, csv=csv_path, markdown=md_path).check()
    threshold = None if fail_above is None else regression.parse_percent(fail_above)
    base, new = regression.load(base_path), regression.load(new_path)
    if base.kind != new.kind:
        raise regression.DiffInputError(
            f"BASE is a {base.kind} document and NEW a {new.kind} document: diff compares two documents of one kind"
        )
    differs = regression.differences(base, new)
    for line in differs:
        log.warning("warning: BASE and NEW differ: %s", line)
    if differs and not allow_different:
        raise regression.DiffInputError(
            f"BASE and NEW differ in {len(differs)} respect(s) (listed above, first: {differs[0]}); they are not "
            "the same measurement: pass --allow-different to compare them anyway"
        )
    from speechperf.results.load import load_warning

    load = load_warning(base.doc, new.doc)
    if load:
        log.warning("%s", load)
    rows = regression.diff(base, new, sample_level, loads_differ=bool(load) and not gate_under_load)
    if not rows:
        raise regression.DiffInputError(
            "BASE and NEW have no stage, cell, variant or scenario in common: there is nothing to compare"
        )
    click.echo(regression.render(rows, base, new, fail_metric, threshold), nl=False)
    failed = [r for r in rows if threshold is not None and r.regressed(fail_metric, threshold)]
    code = 1 if failed else 0
    exports.write(regression.document(rows, base, new, fail_metric, threshold, code))
    sys.exit(code)
