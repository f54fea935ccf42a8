"""compare's plots, drawn from its document: ``--plot FILE.png|FILE.svg`` and the HTML page's.

- ``FILE``: per-sample latency of each cell as a box plot, like hyperfine's plot_whisker: each box holds every
  per-sample runtime of every finished run of a cell (ms), fastest cell on top. With cells of more than one batch
  size (``--sweep batch_size=1,4,16``) a second panel draws the trade-off: throughput (samples/s) against the latency
  per batch (ms), one line per backend through its batch sizes;
- ``FILE.length.png``: runtime against audio length, one panel per stage; each cell's points are its samples (median
  runtime over the runs against audio seconds), with its fitted line (``speechperf.length_cost``) over them, or the
  legend says why there is none;
- ``FILE.scaling.png`` with ``--threads 1,N``: the speed-up over 1 thread per backend, with the ideal line;
- ``FILE.roofline.png``: each cell's stages under the machine's roofs (``speechperf.views.roofline_plot``).

matplotlib runs with the Agg backend, so no display is needed.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Sequence
from pathlib import Path

from speechperf.errors import SpeechperfError
from speechperf.extras import MissingExtraError, require
from speechperf.outputs import check_figure_path, check_output_path, save_figure
from speechperf.results import Document
from speechperf.views.bench_plots import draw_fit
from speechperf.views.compare_cells import CellRuns, cells
from speechperf.views.roofline_plot import plot_roofline, roofline_path, roofs_of

log = logging.getLogger(__name__)


def check_plot_path(path: Path) -> None:
    """Before anything is measured: the file type, the path itself (as every output, speechperf.outputs), and
    matplotlib (an extra) being installed."""
    check_figure_path(path, "--plot")
    for beside in (length_plot_path(path), scaling_path(path), roofline_path(path)):  # written after the runs
        check_output_path(beside, "--plot (beside it)")
    require("matplotlib", "--plot")


def _beside(path: Path, kind: str) -> Path:
    path = Path(path)
    return path.with_name(f"{path.stem}.{kind}{path.suffix}")


def scaling_path(path: Path) -> Path:
    """Where the thread-scaling plot of ``--plot FILE.png`` goes: ``FILE.scaling.png`` beside it."""
    return _beside(path, "scaling")


def length_plot_path(path: Path) -> Path:
    """``c.png`` -> ``c.length.png``: runtime against audio length."""
    return _beside(path, "length")


def draw(doc: Document, path: Path) -> list[Path]:
    """The plots of ``--plot path``: the box plot, FILE.length.png, FILE.scaling.png and FILE.roofline.png where
    there is something to draw; returns the files drawn."""
    found = cells(doc)
    drawn = [plot_latency(found, path), plot_length_cost(found, path)]
    if any(c.row.get("speedup_vs_1t") is not None for c in found):
        drawn.append(plot_scaling(found, scaling_path(path)))
    roofline = plot_roofline(found, path, roofs_of(doc))
    if roofline is not None:
        drawn.append(roofline)
    return drawn


def draw_for_page(doc: Document, folder: Path) -> list[Path]:
    """The HTML page's plots, into ``folder``; none without matplotlib (an extra), which the page then does without,
    nor when no cell finished a run."""
    try:
        require("matplotlib", "the plots of --html")
    except MissingExtraError:
        log.info("note: the HTML page has no plots: matplotlib is not installed (pip install speechperf[plot])")
        return []
    if not any(c.ok for c in cells(doc)):
        return []
    return draw(doc, folder / "compare.png")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_scaling(found: Sequence[CellRuns], path: Path, title: str = "speechperf compare: thread scaling") -> Path:
    """Speed-up over 1 thread against threads, one line per backend (and sweep values), with the ideal line
    (N threads, N times faster)."""
    plt = _pyplot()
    lines: dict[str, list] = {}
    for c in found:
        if c.row.get("speedup_vs_1t") is not None:
            lines.setdefault(c.backend, []).append((c.threads, c.row["speedup_vs_1t"]))
    if not lines:
        raise SpeechperfError(f"--plot {path}: no backend finished at 1 thread and another count, nothing to plot")
    most = max(t for points in lines.values() for t, _ in points)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.plot([1, most], [1, most], linestyle="--", color="grey", label="ideal (efficiency 1.0)")
    for backend, points in sorted(lines.items()):
        points.sort()
        ax.plot([t for t, _ in points], [v for _, v in points], marker="o", label=backend)
    ax.set_xlabel("threads")
    ax.set_ylabel("speed-up over 1 thread (mean per-sample runtime)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, Path(path), "--plot")


def plot_latency(found: Sequence[CellRuns], path: Path, title: str = "speechperf compare") -> Path:
    check_plot_path(path)
    plt = _pyplot()
    finished = sorted((c for c in found if c.per_sample), key=lambda c: c.mean or 0.0, reverse=True)
    if not finished:
        raise SpeechperfError(f"--plot {path}: no cell finished a run, there is nothing to plot")
    tradeoff = _tradeoff_lines(finished)
    height = 1.2 + 0.6 * len(finished)
    if tradeoff:
        fig, (ax, trade_ax) = plt.subplots(1, 2, figsize=(14, max(height, 4.0)))
        _draw_tradeoff(trade_ax, tradeoff)
    else:
        fig, ax = plt.subplots(figsize=(8, height))
    ax.boxplot(
        [[v * 1e3 for v in c.per_sample] for c in finished],
        orientation="horizontal",
        whis=(0, 100),
        tick_labels=[c.label for c in finished],
        patch_artist=True,
        boxprops={"facecolor": "#9ecae1"},
        medianprops={"color": "#08306b"},
    )
    ax.set_xlabel("per-sample runtime (ms); whiskers: min and max")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, Path(path), "--plot")


def _tradeoff_lines(found: Sequence[CellRuns]) -> dict[str, list[CellRuns]]:
    """Per backend (and threads, and any other swept value): its cells by batch size, when more than one batch
    size was run."""
    sized = [
        c
        for c in found
        if c.row.get("batch_size") is not None and c.row.get("batch_latency_mean_ms") and c.row.get("samples_per_s")
    ]
    if len({c.row["batch_size"] for c in sized}) < 2:
        return {}
    lines: dict[str, list[CellRuns]] = {}
    for c in sized:
        others = [f"{k}={v}" for k, v in c.params if k != "batch_size"]
        name = " ".join([c.backend, *([f"t={c.threads}"] if c.threads != 1 else []), *others])
        lines.setdefault(name, []).append(c)
    return {name: sorted(group, key=lambda c: c.row["batch_size"]) for name, group in lines.items()}


def _draw_tradeoff(ax, lines: dict[str, list[CellRuns]]) -> None:
    for name, group in lines.items():
        xs = [c.row["batch_latency_mean_ms"] for c in group]
        ys = [c.row["samples_per_s"] for c in group]
        ax.plot(xs, ys, marker="o", label=name)
        for c, x, y in zip(group, xs, ys):
            ax.annotate(f"batch {c.row['batch_size']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("latency per batch (ms, log scale)")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_title("throughput against latency, by batch size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _length_points(c: CellRuns) -> dict[str, tuple[list[float], list[float]]]:
    """Per stage: audio seconds and median runtime (ms) of each sample."""
    times: dict[str, dict[str, list[float]]] = {}
    seconds: dict[str, dict[str, float]] = {}
    for run in c.timings:
        for stage in run.get("stages", []):
            name = f"stage{stage['stage']} {stage.get('role')}"
            for sid, ns in stage["ns"].items():
                times.setdefault(name, {}).setdefault(sid, []).append(statistics.median(ns) / 1e6)
            seconds.setdefault(name, {}).update(stage.get("audio_s") or {})
    out = {}
    for name, per_sample in times.items():
        ids = [sid for sid in per_sample if sid in seconds[name]]
        out[name] = ([seconds[name][sid] for sid in ids], [statistics.median(per_sample[sid]) for sid in ids])
    return out


def plot_length_cost(found: Sequence[CellRuns], path: Path, title: str = "speechperf compare") -> Path:
    """Write the scatter with fitted lines; the caller checked the path and matplotlib (check_plot_path)."""
    plt = _pyplot()
    finished = [c for c in found if c.ok]
    points = {c.label: _length_points(c) for c in finished}
    stages = sorted({name for c in finished for name in points[c.label]})
    fig, axes = plt.subplots(1, max(1, len(stages)), figsize=(6 * max(1, len(stages)), 4.5), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        for c in finished:
            mine = points[c.label].get(stage)
            if not mine or not mine[0]:
                continue
            draw_fit(ax, mine[0], mine[1], c.length_fits.get(stage), c.label)
        ax.set_xlabel(f"{stage}: audio seconds")
        ax.set_ylabel("per-sample runtime (ms), median over runs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title}: cost against input length")
    return save_figure(fig, length_plot_path(path), "--plot")
