"""``speechperf history``: the runs in the results store, filtered; one metric of them plotted over time or over
commits per backend; the listing (and plot) as an HTML page (docs/history.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from speechperf.cli.options import wide_option

_path = click.Path(dir_okay=False, path_type=Path)
LIMIT_MAX = 1_000_000_000  # beyond SQLite's integers the query fails and would blame the store


def _not_empty(ctx, param, value):
    """A filter given as '' would select everything: refused, as an empty --backends is elsewhere."""
    if value is not None and not value.strip():
        raise click.BadParameter(f"{value!r}: empty; give a value or leave the option out")
    return value


@click.command()
@click.option("--store", type=_path, default=None, help="The results store; default: <cache>/results.sqlite.")
@click.option("--backend", default=None, callback=_not_empty, help="Only runs on this backend.")
@click.option(
    "--config",
    "--model",
    "model",
    default=None,
    callback=_not_empty,
    help="Only runs of this model_type (S2T), with this model in a stage (whisper-tiny-en), or of this config hash.",
)
@click.option("--since", default=None, metavar="DATE", help="Only runs from this ISO date or time on (UTC).")
@click.option(
    "--commit", default=None, callback=_not_empty, help="Only runs at this git commit (its first characters)."
)
@click.option("--limit", type=click.IntRange(min=1, max=LIMIT_MAX), default=None, help="Only the newest N runs.")
@click.option(
    "--plot",
    "metric",
    default=None,
    metavar="METRIC",
    help="Plot this stored metric (e.g. mean_ms, p99_ms, peak_qps; runtime: every kind's mean_ms).",
)
@click.option(
    "--stage",
    default=None,
    callback=_not_empty,
    help="With --plot: this stage (e.g. 'stage1 s2t'); default: the total (each stage where there is none).",
)
@click.option("--x", "x_axis", type=click.Choice(("time", "commit")), default="time", show_default=True)
@click.option(
    "--output",
    "-o",
    type=_path,
    default=None,
    help="The listing as a history document (JSON); with --plot, a FILE.png or FILE.svg is the plot instead.",
)
@click.option("--csv", "csv_path", type=_path, default=None, help="The listing as CSV.")
@click.option("--markdown", "md_path", type=_path, default=None, help="The listing as Markdown.")
@click.option("--html", "html_path", type=_path, default=None, help="The listing (and plot) as one HTML page.")
@wide_option("every column unwrapped (a long config path or headline on one line)")
def history(
    store, backend, model, since, commit, limit, metric, stage, x_axis, output, csv_path, md_path, html_path, wide
):
    """List the stored runs of every kind (bench, compare, optimize, loadgen, serving...), newest first, and plot a
    metric over them (docs/history.md).

    Exit codes: 0 listed (or plotted); 2 bad input (a filter or metric the store does not hold: the line lists
    those it does; a file that is not a speechperf store).
    """
    from speechperf.exports import Exports
    from speechperf.history import HistoryOptions, run_history, split_output
    from speechperf.store.history import Filters
    from speechperf.store.keep import Keep

    plot, json_path = split_output(output, metric)
    options = HistoryOptions(
        store=store,
        filters=Filters(backend, model, since, commit, limit),
        metric=metric,
        stage=stage,
        x_axis=x_axis,
        plot=plot,
        exports=Exports(json=json_path, csv=csv_path, markdown=md_path, keep=Keep(store=None, html=html_path)),
        wide=wide,
    )
    sys.exit(run_history(options))
