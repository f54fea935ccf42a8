"""``--plot FILE.png``: beside the box plot, ``FILE.length.png``, runtime against audio length per cell and stage.

One panel per stage; each cell's points are its samples (median runtime over the runs against audio seconds), with
its fitted line ``fixed_ms + ms_per_audio_s * seconds`` (``speechperf.length_cost``) drawn over them. A cell with
no fit (fewer than three distinct lengths) shows its points alone, and the legend says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from speechperf.compare import summary as summ
from speechperf.compare.plot import length_plot_path
from speechperf.outputs import save_figure
from speechperf.views.bench_plots import draw_fit


def _points(s: summ.CellSummary) -> dict[str, tuple[list[float], list[float]]]:
    """Per stage: audio seconds and median runtime (ms) of each sample."""
    times: dict[str, dict[str, list[float]]] = {}
    seconds: dict[str, dict[str, float]] = {}
    for run in s.runs:
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


def plot_length_cost(summaries: Sequence[summ.CellSummary], path: Path, title: str = "speechperf compare") -> Path:
    """Write the scatter with fitted lines; the caller checked the path and matplotlib (check_plot_path)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finished = [s for s in summaries if s.ok]
    stages = sorted({name for s in finished for name in _points(s)})
    fig, axes = plt.subplots(1, max(1, len(stages)), figsize=(6 * max(1, len(stages)), 4.5), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        for s in finished:
            points = _points(s).get(stage)
            if not points or not points[0]:
                continue
            draw_fit(ax, points[0], points[1], summ.length_fits(s)[stage], s.label)
        ax.set_xlabel(f"{stage}: audio seconds")
        ax.set_ylabel("per-sample runtime (ms), median over runs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title}: cost against input length")
    return save_figure(fig, length_plot_path(path), "--plot")
