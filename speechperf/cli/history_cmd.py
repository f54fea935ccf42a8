"""``speechperf history``: the runs in the results store, filtered; one metric of them plotted over time or over
commits per backend; the listing (and plot) as an HTML page (docs/history.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import attrs
import click

from speechperf.errors import SpeechperfError

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
@click.option("--output", "-o", type=_path, default=None, help="With --plot: the plot file (.png or .svg).")
@click.option("--html", "html_path", type=_path, default=None, help="The listing (and plot) as one HTML page.")
def history(store, backend, model, since, commit, limit, metric, stage, x_axis, output, html_path) -> None:
    """List the stored runs of every kind (bench, compare, optimize, loadgen, serving...), newest first, and plot a
    metric over them (docs/history.md).

    Exit codes: 0 listed (or plotted); 2 bad input (a filter or metric the store does not hold: the line lists
    those it does; a file that is not a speechperf store).
    """
    from speechperf.results.document import current_command
    from speechperf.store import db, history, plot
    from speechperf.store.html import check_html_path, render, table_html, write_html
    from speechperf.store.keep import default_store
    from speechperf.tables import render_table

    if metric is None and (output is not None or stage is not None):
        raise SpeechperfError("-o and --stage go with --plot METRIC; pass --plot too")
    if metric is not None and output is None and html_path is None:
        raise SpeechperfError(f"--plot {metric}: where to? pass -o FILE.png (or --html FILE)")
    if output is not None:
        plot.check_plot_path(output)
    if html_path is not None:
        check_html_path(html_path)
    store = store or default_store()
    db.check_store(store)
    filters = history.Filters(backend, model, since, commit, limit)
    rows = history.runs(store, filters)
    lines = history.series(store, metric, filters, stage) if metric else None
    click.echo(
        render_table(
            f"speechperf history: {len(rows)} run(s) in {store}",
            history.COLUMNS,
            ([r[c] for c in history.COLUMNS] for r in rows),
            left=("time", "kind", "model", "config", "backends", "commit", "headline"),
        ),
        nl=False,
    )
    images = []
    with tempfile.TemporaryDirectory(prefix="speechperf-history-") as folder:
        if lines is not None:
            shown_stage = history.plotted_stage(store, metric, stage)
            drawn = plot.plot_history(lines, metric, x_axis, output or Path(folder) / "history.png", shown_stage)
            images.append(drawn)
            if output is not None:
                click.echo(f"history: plot of {metric} over {x_axis} ({len(lines)} line(s)): {output}", err=True)
        if html_path is not None:
            table = table_html("stored runs", history.COLUMNS, rows)
            raw = {"store": str(store), "filters": attrs.asdict(filters), "runs": rows}
            if lines is not None:
                raw["series"] = {name: [list(p) for p in points] for name, points in lines.items()}
            page = render("speechperf history", [table], images, {}, raw, command=current_command())
            write_html(html_path, page)
            click.echo(f"history: HTML report {html_path}", err=True)
