"""``--plot FILE.png|FILE.svg``: per-sample latency of each cell as a box plot, like hyperfine's plot_whisker,
and beside it ``FILE.roofline.png``: each cell's stages under the machine's roofs (speechperf.compare.roofline_plot).

Each box holds every per-sample runtime of every finished run of a cell (ms), fastest cell on top. With cells of
more than one batch size (``--sweep batch_size=1,4,16``) a second panel draws the trade-off: throughput (samples/s)
against the latency per batch (ms), one line per backend through its batch sizes. matplotlib runs with the Agg
backend, so no display is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from speechperf.errors import SpeechperfError
from speechperf.extras import require
from speechperf.outputs import check_figure_path, check_output_path, save_figure


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
    """``c.png`` -> ``c.length.png``: runtime against audio length (speechperf.compare.length_plot)."""
    return _beside(path, "length")


def plot_scaling(scaling: Mapping, path: Path, title: str = "speechperf compare: thread scaling") -> Path:
    """Speed-up over 1 thread against threads, one line per backend (and sweep values), with the ideal line
    (N threads, N times faster); ``scaling`` is speechperf.compare.scaling's label -> Scaling."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: dict[str, list] = {}
    for s in scaling.values():
        lines.setdefault(s.backend, []).append((s.threads, s.speedup))
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


def plot_latency(summaries: Sequence, path: Path, title: str = "speechperf compare") -> Path:
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finished = sorted((s for s in summaries if s.per_sample), key=lambda s: s.mean, reverse=True)
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
        [[v * 1e3 for v in s.per_sample] for s in finished],
        orientation="horizontal",
        whis=(0, 100),
        tick_labels=[s.label for s in finished],
        patch_artist=True,
        boxprops={"facecolor": "#9ecae1"},
        medianprops={"color": "#08306b"},
    )
    ax.set_xlabel("per-sample runtime (ms); whiskers: min and max")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, Path(path), "--plot")


def roofline_path(path: Path) -> Path:
    return _beside(path, "roofline")


def _tradeoff_lines(summaries: Sequence) -> dict[str, list]:
    """Per backend (and threads, and any other swept value): its cells by batch size, when more than one batch
    size was run."""
    sized = [s for s in summaries if s.batch_size is not None and s.batch_latency and s.samples_per_s]
    if len({s.batch_size for s in sized}) < 2:
        return {}
    lines: dict[str, list] = {}
    for s in sized:
        others = [f"{k}={v}" for k, v in s.cell.params if k != "batch_size"]
        name = " ".join([s.cell.backend, *([f"t={s.cell.threads}"] if s.cell.threads != 1 else []), *others])
        lines.setdefault(name, []).append(s)
    return {name: sorted(cells, key=lambda s: s.batch_size) for name, cells in lines.items()}


def _draw_tradeoff(ax, lines: dict[str, list]) -> None:
    for name, cells in lines.items():
        xs = [s.batch_latency * 1e3 for s in cells]
        ys = [s.samples_per_s for s in cells]
        ax.plot(xs, ys, marker="o", label=name)
        for s, x, y in zip(cells, xs, ys):
            ax.annotate(f"batch {s.batch_size}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("latency per batch (ms, log scale)")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_title("throughput against latency, by batch size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot_percentiles(rows: Sequence, path: Path, title: str = "speechperf compare --scenario") -> Path | None:
    """``compare --scenario``'s latency percentiles: per cell, each percentile LoadGen reported (p50 ... p99.9) of
    the run behind its figure (Server: at the peak), latency on a log axis; None when no cell has any."""
    measured = [r for r in rows if r.percentiles_ms]
    if not measured:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for row in measured:
        points = sorted((float(k.lstrip("p")), v) for k, v in row.percentiles_ms.items() if v is not None)
        ax.plot(range(len(points)), [v for _, v in points], marker="o", label=f"{row.label} ({row.result})")
        ax.set_xticks(range(len(points)), [f"p{q:g}" for q, _ in points])
    ax.set_yscale("log")
    ax.set_xlabel("latency percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, Path(path), "--html plot")
