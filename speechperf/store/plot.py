"""``speechperf history --plot METRIC -o FILE.png``: one stored metric over time or over commits, a line per config
and backend (speechperf.store.history.series), each run a marker with its own spread as an error bar where it
stored one; the axes carry the figure's unit, no two lines share both colour and marker, and the legend sits
outside the data. matplotlib runs with the Agg backend: no display is needed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from speechperf.outputs import check_figure_path, save_figure
from speechperf.results import figures
from speechperf.store.history import ERROR_OF, RUNTIME, Point

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


def check_plot_path(path: Path) -> Path:
    return check_figure_path(path, "-o")


def styles(count: int) -> list[tuple[str, str]]:
    """(colour, marker) for each of ``count`` lines: the 10 colours of tab10, each time round with the next marker,
    so no two lines look alike."""
    return [(f"C{i % 10}", MARKERS[(i // 10 + i) % len(MARKERS)]) for i in range(count)]


def axis_label(metric: str) -> str:
    """``mean_ms: mean per-sample runtime ... (ms)``: the figure's name, meaning and unit."""
    name = "mean_ms" if metric == RUNTIME else metric
    figure = figures.BY_NAME.get(name)
    if figure is None:
        return metric
    unit = f" ({figure.unit})" if figure.unit else ""
    return f"{name}{unit}"


def _spread_at(points: list[Point], order: list[str], line: int, lines: int) -> list[float]:
    """x of each point over commits: its commit's place, the runs of one commit side by side within it (and each
    line a little apart), so that none hides another."""
    width = 0.6 / max(lines, 1)
    same = {c: [p.commit for p in points].count(c) for c in order}
    seen: dict[str, int] = {}
    xs = []
    for p in points:
        k = seen[p.commit] = seen.get(p.commit, -1) + 1
        xs.append(order.index(p.commit) - 0.3 + width * (line + (k + 0.5) / same[p.commit]))
    return xs


def plot_history(lines: dict[str, list[Point]], metric: str, x: str, path: Path, stage: str | None = None) -> Path:
    """``lines``: per line, its runs' Points oldest first. Over commits, the commits are placed in the order they
    were first stored, and the runs of a commit side by side within its place."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4.8))
    if x == "commit":
        order = list(dict.fromkeys(p.commit for points in lines.values() for p in points))  # each commit once
        order.sort(key=lambda c: min(p.time for points in lines.values() for p in points if p.commit == c))
        where = {
            name: _spread_at(points, order, i, len(lines)) for i, (name, points) in enumerate(sorted(lines.items()))
        }
        ax.set_xticks(range(len(order)), order, rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.5, len(order) - 0.5)
        ax.set_xlabel("commit (in the order first stored)")
    else:
        from matplotlib import dates

        where = {
            name: [dates.date2num(datetime.fromisoformat(p.time)) for p in points] for name, points in lines.items()
        }
        ax.xaxis_date()
        fig.autofmt_xdate()
        ax.set_xlabel("time the run was stored (UTC)")
    for (name, points), (colour, marker) in zip(sorted(lines.items()), styles(len(lines))):
        errors = [p.error for p in points]
        ax.errorbar(
            where[name],
            [p.value for p in points],
            yerr=None if all(e is None for e in errors) else [e or 0.0 for e in errors],
            color=colour,
            marker=marker,
            markersize=6,
            capsize=3,
            linewidth=1.2,
            label=f"{name} ({len(points)} run(s))",
        )
    ax.set_ylabel(axis_label(metric))
    error_name = ERROR_OF.get("mean_ms" if metric == RUNTIME else metric)
    bars = f"; error bars: ± the run's {error_name}" if error_name else ""
    ax.set_title(f"speechperf history: {axis_label(metric)}, {stage or 'each stage'}{bars}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return save_figure(fig, path, "-o")
