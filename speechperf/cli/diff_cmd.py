"""``speechperf diff BASE.json NEW.json``: per stage or cell, new against base, and a regression gate for CI.

Exit codes: 0 no significant regression (or no ``--fail-above`` given); 1 a significant regression of
``--fail-metric`` above ``--fail-above``; 2 bad input (unreadable or foreign JSON, an unknown ``schema_version``,
runs that differ in config, inputs, threads or machine without ``--allow-different``).
"""

from __future__ import annotations

import logging
import sys

import click

log = logging.getLogger(__name__)


@click.command()
@click.argument("base_path", metavar="BASE.json", type=click.Path(dir_okay=False))
@click.argument("new_path", metavar="NEW.json", type=click.Path(dir_okay=False))
@click.option(
    "--fail-above",
    default=None,
    metavar="PCT",
    help="Exit 1 when --fail-metric of a stage or cell got worse by more than this (5% or 0.05), significantly "
    "(Welch's p < 0.05) for the timing metrics.",
)
@click.option(
    "--fail-metric",
    type=click.Choice(("mean", "median", "p90", "peak_rss", "wer")),
    default="mean",
    show_default=True,
    help="The figure the gate watches.",
)
@click.option(
    "--allow-different",
    is_flag=True,
    help="Compare runs whose config, inputs, threads or machine differ (each difference is still warned about).",
)
def diff(base_path, new_path, fail_above, fail_metric, allow_different) -> None:
    """Compare NEW.json against BASE.json (both from `bench -o` or both from `compare -o`)."""
    from speechperf import regression

    threshold = None if fail_above is None else regression.parse_percent(fail_above)
    base, new = regression.load(base_path), regression.load(new_path)
    if base.kind != new.kind:
        raise regression.DiffInputError(
            f"BASE is a {base.kind} JSON and NEW a {new.kind} JSON: both must come from bench -o, or both from "
            "compare -o"
        )
    differs = regression.differences(base, new)
    for line in differs:
        log.warning("warning: BASE and NEW differ: %s", line)
    if differs and not allow_different:
        raise regression.DiffInputError(
            f"BASE and NEW differ in {len(differs)} respect(s) (listed above, first: {differs[0]}); they are not "
            "the same measurement: pass --allow-different to compare them anyway"
        )
    rows = regression.diff(base, new)
    if not rows:
        raise regression.DiffInputError("BASE and NEW have no stage or cell in common: there is nothing to compare")
    click.echo(regression.render(rows, base, new, fail_metric, threshold), nl=False)
    failed = [r for r in rows if threshold is not None and r.regressed(fail_metric, threshold)]
    sys.exit(1 if failed else 0)
