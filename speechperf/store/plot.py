"""``speechperf history --plot METRIC -o FILE.png``: one stored metric over time or over commits, a line per
backend (and stage). matplotlib runs with the Agg backend: no display is needed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from speechperf.outputs import check_figure_path, save_figure


def check_plot_path(path: Path) -> Path:
    return check_figure_path(path, "-o")


def plot_history(lines: dict[str, list[tuple[str, str, float]]], metric: str, x: str, path: Path) -> Path:
    """``lines``: per backend, (time, commit, value) oldest first (speechperf.store.history.series). Over commits,
    the commits are placed in the order they were first stored, and a commit stored several times is drawn at
    each of its values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    if x == "commit":
        order: list[str] = []
        for points in lines.values():
            order += [c for _, c, _ in points if c not in order]
        order.sort(key=lambda c: min(t for points in lines.values() for t, cc, _ in points if cc == c))
        for name, points in sorted(lines.items()):
            ax.plot([order.index(c) for _, c, _ in points], [v for _, _, v in points], "o-", label=name)
        ax.set_xticks(range(len(order)), order, rotation=30, ha="right", fontsize=8)
        ax.set_xlabel("commit (in the order first stored)")
    else:
        from matplotlib import dates

        for name, points in sorted(lines.items()):
            when = [dates.date2num(datetime.fromisoformat(t)) for t, _, _ in points]
            ax.plot(when, [v for _, _, v in points], "o-", label=name)
        ax.xaxis_date()
        fig.autofmt_xdate()
        ax.set_xlabel("time (UTC)")
    ax.set_ylabel(metric)
    ax.set_title(f"speechperf history: {metric}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path, "-o")
