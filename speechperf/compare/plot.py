"""``--plot FILE.png|FILE.svg``: per-sample latency of each cell as a box plot, like hyperfine's plot_whisker.

Each box holds every per-sample runtime of every finished run of a cell (ms), fastest cell on top. matplotlib runs
with the Agg backend, so no display is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from speechperf.errors import SpeechperfError
from speechperf.extras import require
from speechperf.outputs import atomic_path

FORMATS = (".png", ".svg")


def check_plot_path(path: Path) -> None:
    """Before anything is measured: the file type, and matplotlib (an extra) being installed."""
    if Path(path).suffix.lower() not in FORMATS:
        raise SpeechperfError(f"--plot {path}: the file must end in {' or '.join(FORMATS)}")
    require("matplotlib", "--plot")


def plot_latency(summaries: Sequence, path: Path, title: str = "speechperf compare") -> Path:
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finished = sorted((s for s in summaries if s.per_sample), key=lambda s: s.mean, reverse=True)
    if not finished:
        raise SpeechperfError(f"--plot {path}: no cell finished a run, there is nothing to plot")
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.6 * len(finished)))
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
    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_path(path, "--plot") as tmp:
            fig.savefig(tmp, format=path.suffix.lower().lstrip("."))
    finally:
        plt.close(fig)
    return path
