"""bench's plots, for its HTML page: the cost against input length (each sample's runtime against its audio
seconds, with the line ``speechperf.length_cost`` fitted) and each stage's per-sample runtimes as a box plot.

matplotlib is the ``plot`` extra: without it there are no plots, and a note says how to install it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from speechperf.benchmark import report
from speechperf.benchmark.results import BenchResult
from speechperf.extras import MissingExtraError, require
from speechperf.outputs import save_figure

log = logging.getLogger(__name__)


def draw(result: BenchResult, folder: Path) -> list[Path]:
    """The PNG files of ``result``'s plots, written in ``folder``: those that have something to show."""
    try:
        matplotlib = require("matplotlib", "the plots of --html")
    except MissingExtraError as exc:
        log.info("note: %s", exc)
        return []
    matplotlib.use("Agg")  # no display: files only
    drawn = (length_plot(result, folder / "bench-length.png"), box_plot(result, folder / "bench-runtime.png"))
    return [p for p in drawn if p is not None]


def _length_points(result: BenchResult) -> dict[str, tuple[list[float], list[float]]]:
    """Per stage with an audio side: each timed sample's audio seconds and runtime (ms)."""
    out = {}
    for s in result.stages:
        if s.runtime is None or s.rtf is None:
            continue
        timed = s.runtime.per_sample_seconds
        ids = [k for k in timed if k in s.rtf.audio_per_sample]
        if ids:
            out[f"stage{s.index} {s.role}"] = ([s.rtf.audio_per_sample[k] for k in ids], [timed[k] * 1e3 for k in ids])
    return out


def length_plot(result: BenchResult, path: Path) -> Path | None:
    """One panel per stage: its samples, and the fitted line over them (or, in the legend, why there is none)."""
    import matplotlib.pyplot as plt

    points = _length_points(result)
    if not points:
        return None
    fits = report.length_fits(result)
    fig, axes = plt.subplots(1, len(points), figsize=(6 * len(points), 4.5), squeeze=False)
    for ax, (stage, (seconds, ms)) in zip(axes[0], points.items()):
        found = fits[stage]
        draw_fit(ax, seconds, ms, found, f"{len(ms)} sample(s)")
        ax.set_xlabel(f"{stage}: {found.audio or 'audio'} audio seconds")
        ax.set_ylabel("per-sample runtime (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"speechperf bench: {result.model_type} on {result.backend}: cost against input length")
    return save_figure(fig, path, "--html")


def draw_fit(ax, seconds, ms, found, name: str) -> None:
    """The samples as dots over input seconds and, where ``length_cost`` found a fit, its line in their colour,
    labelled ``name`` with the fit's figures (or why there is none); bench's and compare's length plots."""
    dots = ax.scatter(seconds, ms, s=18, alpha=0.8)
    if found.reason or found.fixed_ms is None or found.ms_per_audio_s is None:
        dots.set_label(f"{name} (no fit: {found.reason})")
        return
    xs = [min(seconds), max(seconds)]
    ax.plot(
        xs,
        [found.fixed_ms + found.ms_per_audio_s * x for x in xs],
        color=dots.get_facecolor()[0],
        label=f"{name}: {found.ms_per_audio_s:.2f} ms/s, fixed {found.fixed_ms:.2f} ms, k={found.exponent:.2f}",
    )


def box_plot(result: BenchResult, path: Path) -> Path | None:
    """A box per stage (and the total of a cascade) of its per-sample runtimes, each sample a dot over it."""
    import matplotlib.pyplot as plt

    series = {
        f"stage{s.index} {s.role}": [v * 1e3 for v in s.runtime.per_sample_seconds.values()]
        for s in result.stages
        if s.runtime is not None and s.runtime.per_sample_seconds
    }
    if len(result.stages) > 1 and result.totals.per_sample_s:
        series["total"] = [v * 1e3 for v in result.totals.per_sample_s.values()]
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 2.0 * len(series)), 4.5))  # wide enough for its title
    ax.boxplot(list(series.values()), showfliers=False)
    ax.set_xticks(range(1, len(series) + 1), list(series))
    for i, values in enumerate(series.values(), 1):
        ax.scatter([i] * len(values), values, s=12, alpha=0.6, color="black", zorder=3)
    ax.set_ylabel("per-sample runtime (ms)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{result.model_type} on {result.backend}: per-sample runtime")
    return save_figure(fig, path, "--html")
