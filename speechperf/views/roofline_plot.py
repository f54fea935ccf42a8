"""``FILE.roofline.png`` beside ``--plot FILE.png``: each cell's stages under the machine's roofs.

Log-log: arithmetic intensity (FLOPs per byte of the traffic lower bound) against achieved GFLOP/s, one point per
stage and cell, under the compute roof and the memory roof (bandwidth x intensity) measured here at each thread
count (speechperf.meters.roofs), as the compare document keeps them (``roofline.roofs``). What it reads is said in it:

- both roofs are drawn whenever they were measured; roofs measured on a busy machine are drawn dashed and named so,
  and a roof not measured at a thread count is named in the notes under the plot;
- a stage without a FLOP rate or a traffic figure cannot be placed: the notes name it and say which is missing;
- the axes span whole decades around the points and the roofs' ridge (at least ``MIN_DECADES``), never fitted to
  the points: two points 3% apart stay close instead of landing in opposite corners.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import attrs

from speechperf.results import Document

#: The fewest decades each axis spans.
MIN_DECADES = 2
#: The least distance (in decades) from a value to the edge of its axis.
EDGE = 0.15
#: Characters per line of the notes under the plot (at their font size, narrower than the axes).
NOTE_WIDTH = 100


@attrs.frozen
class Ceiling:
    value: float  # GFLOP/s or GB/s


@attrs.frozen
class Roofs:
    """The roofs at one thread count as the document keeps them (``speechperf.meters.roofs.Roofs``' figures)."""

    peak: Ceiling | None  # the fp32 compute roof
    memory: Ceiling | None
    busy: str | None = None  # why they cannot be trusted; None: measured on a quiet machine

    @property
    def ridge(self) -> float | None:
        """The arithmetic intensity (FLOPs per byte) where the two roofs meet."""
        if self.peak is None or self.memory is None or self.memory.value <= 0:
            return None
        return self.peak.value / self.memory.value


def roofs_json(peak: float | None, memory: float | None, busy: str | None) -> dict:
    """The document's form of one thread count's roofs (``roofline.roofs``: threads -> this, or None)."""
    return {"peak_gflops_per_s": peak, "memory_gb_per_s": memory, "busy": busy}


def roofs_of(doc: Document) -> dict[int, Roofs | None]:
    """threads -> the roofs the run was placed under (None: none measured); {} for a document without them."""
    out: dict[int, Roofs | None] = {}
    for threads, data in ((doc.get("roofline") or {}).get("roofs") or {}).items():
        if not data:
            out[int(threads)] = None
            continue
        peak, memory = data.get("peak_gflops_per_s"), data.get("memory_gb_per_s")
        out[int(threads)] = Roofs(
            None if peak is None else Ceiling(peak), None if memory is None else Ceiling(memory), data.get("busy")
        )
    return out


def roofline_path(path: Path) -> Path:
    """``c.png`` -> ``c.roofline.png``, beside the box plot of ``--plot``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.roofline{path.suffix}")


class Point(NamedTuple):
    label: str  # the cell
    stage: str
    intensity: float
    gflops_per_s: float
    threads: int


def points_and_gaps(summaries: Sequence) -> tuple[list[Point], list[str]]:
    """The stages that can be placed, and one note per cell naming the stages that cannot and why; ``summaries``:
    each cell's ``label``, ``threads`` and ``roofline`` (stage -> its roofline columns)."""
    points, gaps = [], []
    for s in summaries:
        missing: dict[str, list[str]] = {}
        stages = {k: v for k, v in s.roofline.items() if k != "total"}
        for stage, values in stages.items():
            if not values.get("gflops_per_s"):
                missing.setdefault("no FLOP rate", []).append(stage)
            elif not values.get("arithmetic_intensity"):
                missing.setdefault("no traffic figure", []).append(stage)
            else:
                points.append(Point(s.label, stage, values["arithmetic_intensity"], values["gflops_per_s"], s.threads))
        if not stages:
            gaps.append(f"{s.label}: no roofline figures (no finished run counted FLOPs)")
        gaps += [f"{s.label}: {why} ({', '.join(names)})" for why, names in missing.items()]
    return points, gaps


def decades(values: Iterable[float], at_least: int = MIN_DECADES) -> tuple[float, float]:
    """The whole decades ``(10**lo, 10**hi)`` that enclose the positive ``values`` with a margin (none sits on an
    edge), widened to ``at_least``."""
    logs = [math.log10(v) for v in values if v and v > 0]
    lo, hi = math.floor(min(logs) - EDGE), math.ceil(max(logs) + EDGE)
    while hi - lo < at_least:  # widen upwards first: the roofs sit above the points
        hi += 1
        if hi - lo < at_least:
            lo -= 1
    return 10.0**lo, 10.0**hi


def roof_notes(roofs_by_threads: Mapping[int, Roofs | None]) -> list[str]:
    """What the plot says about the roofs it draws or cannot draw, per thread count."""
    notes = []
    for threads, roofs in sorted(roofs_by_threads.items()):
        if roofs is None:
            notes.append(
                f"no roofs measured at {threads} thread(s): run `speechperf check --meters roofline --threads {threads}`"
            )
            continue
        for name, roof in (("compute", roofs.peak), ("memory", roofs.memory)):
            if roof is None:
                notes.append(f"no {name} roof measured at {threads} thread(s)")
        if roofs.busy:
            notes.append(f"roofs at {threads} thread(s) dashed: measured while other processes kept cores busy, low")
    return notes


def roofline_figure(
    points: Sequence[Point], gaps: Sequence[str], roofs_by_threads: Mapping[int, Roofs | None], title: str
):
    """The matplotlib figure of ``points`` under the roofs, with ``gaps`` and the roofs' notes written under it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    drawn = {n: r for n, r in roofs_by_threads.items() if r is not None}
    xlim = decades([p.intensity for p in points] + [r.ridge for r in drawn.values() if r.ridge])
    ylim = decades([p.gflops_per_s for p in points] + [r.peak.value for r in drawn.values() if r.peak])
    notes = [*gaps, *roof_notes(roofs_by_threads)]
    fig, ax = plt.subplots(figsize=(8, 5.5 + 0.18 * len(notes)))
    xs = np.logspace(math.log10(xlim[0]), math.log10(xlim[1]), 200)
    for threads, roofs in sorted(drawn.items()):
        ceiling = np.full_like(xs, np.inf)
        if roofs.peak is not None:
            ceiling = np.minimum(ceiling, roofs.peak.value)
        if roofs.memory is not None:
            ceiling = np.minimum(ceiling, roofs.memory.value * xs)
        what = [
            f"{roofs.peak.value:.0f} GFLOP/s" if roofs.peak else "",
            f"{roofs.memory.value:.1f} GB/s" if roofs.memory else "",
        ]
        ax.plot(
            xs,
            ceiling,
            "--" if roofs.busy else "-",
            color="black",
            alpha=0.4 + 0.3 * (threads > 1),
            label=f"roofs, {threads} thread(s): {', '.join(w for w in what if w)}"
            + (" (busy machine)" if roofs.busy else ""),
        )
    markers = "osD^v<>Pp*"
    for i, label in enumerate(sorted({p.label for p in points})):
        mine = [p for p in points if p.label == label]
        ax.scatter(
            [p.intensity for p in mine],
            [p.gflops_per_s for p in mine],
            marker=markers[i % len(markers)],
            s=50,
            label=label,
        )
        for p in mine:
            ax.annotate(p.stage, (p.intensity, p.gflops_per_s), textcoords="offset points", xytext=(5, -10), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte, traffic lower bound)")
    ax.set_ylabel("achieved GFLOP/s (analytic FLOPs / median runtime)")
    ax.set_title(title)
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=8)
    if notes:  # under the axes, as a child of them so that tight_layout makes room, never wider than they are
        lines = [line for note in notes for line in textwrap.wrap(note, NOTE_WIDTH, subsequent_indent="  ")]
        text = "\n".join(["left out or drawn with care:", *lines])
        ax.text(0, -0.13, text, transform=ax.transAxes, va="top", fontsize=7)
    return fig


def plot_roofline(
    summaries: Sequence,
    path: Path,
    roofs_by_threads: Mapping[int, Roofs | None],
    title: str = "speechperf compare: roofline",
) -> Path | None:
    """Draw ``roofline_path(path)`` under the roofs the document holds (busy ones included); None (nothing written)
    when no stage has both a FLOP rate and an intensity."""
    from speechperf.outputs import check_output_path, save_figure

    points, gaps = points_and_gaps(summaries)
    if not points:
        return None
    out = check_output_path(roofline_path(path), "--plot (its roofline)")
    roofs = {n: roofs_by_threads.get(n) for n in sorted({p.threads for p in points})}
    return save_figure(roofline_figure(points, gaps, roofs, title), out, "--plot (its roofline)")
