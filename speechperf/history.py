"""``speechperf history`` as one call: the stored runs that pass the filters, listed (and one metric of them
plotted) as a ``history`` document, shown, written and drawn through the command lifecycle
(``speechperf.lifecycle``). The queries are ``speechperf.store.history``'s; the listing and the plot are
``speechperf.views.history``'s, from the document, so ``speechperf show`` gives them again."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import SpeechperfError
from speechperf.exports import Exports
from speechperf.lifecycle import lifecycle
from speechperf.results import Document
from speechperf.store import db, plot
from speechperf.store import history as stored
from speechperf.store.keep import default_store

log = logging.getLogger(__name__)

#: ``-o`` with one of these suffixes, with ``--plot``, is the plot file (as before the history document).
PLOT_SUFFIXES = (".png", ".svg")


@attrs.frozen
class HistoryOptions:
    """``store``: None for the cache's; ``metric``: ``--plot``; ``plot``: the plot file (``-o FILE.png``);
    ``exports``: the history document's (``-o FILE.json``, ``--csv``, ``--markdown``, ``--html``; never the store:
    a listing is not a run)."""

    store: Path | None = None
    filters: stored.Filters = stored.Filters()
    metric: str | None = None
    stage: str | None = None
    x_axis: str = "time"
    plot: Path | None = None
    exports: Exports = Exports()
    wide: bool = False  #: --wide: the listing unwrapped


def split_output(output: Path | None, metric: str | None) -> tuple[Path | None, Path | None]:
    """``-o``: (the plot file, the JSON document): a .png or .svg with ``--plot`` is the plot, anything else the
    document."""
    if output is None or output.suffix.lower() not in PLOT_SUFFIXES:
        return None, output
    if metric is None:
        raise SpeechperfError(f"-o {output}: a plot file goes with --plot METRIC; pass --plot too (or -o FILE.json)")
    return output, None


def run_history(options: HistoryOptions) -> int:
    if options.metric is None and options.stage is not None:
        raise SpeechperfError("--stage goes with --plot METRIC; pass --plot too")
    drawn_or_kept = (options.plot, options.exports.keep.html, options.exports.json)
    if options.metric is not None and drawn_or_kept == (None, None, None):
        raise SpeechperfError(
            f"--plot {options.metric}: where to? pass -o FILE.png (or --html FILE, or -o FILE.json for its points)"
        )
    if options.plot is not None:
        plot.check_plot_path(options.plot)
    store = options.store or default_store()
    db.check_store(store)
    with lifecycle(options.exports, wide=options.wide) as run:
        rows = stored.runs(store, options.filters)
        body: dict[str, Any] = {
            "store": str(store),
            "filters": attrs.asdict(options.filters),
            "metric": options.metric,
            "stage": None,
            "x_axis": options.x_axis,
            "series": None,
            "plot": None if options.plot is None else str(options.plot),
        }
        if options.metric is not None:
            lines = stored.series(store, options.metric, options.filters, options.stage)
            body["stage"] = stage = stored.plotted_stage(store, options.metric, options.stage)
            body["series"] = {name: [list(p) for p in points] for name, points in lines.items()}
            if options.plot is not None:
                plot.plot_history(lines, options.metric, options.x_axis, options.plot, stage)
                log.info(
                    "history: plot of %s over %s (%d line(s)): %s",
                    options.metric,
                    options.x_axis,
                    len(lines),
                    options.plot,
                )
        return run.finish(Document("history", rows=rows, body=body), 0)
