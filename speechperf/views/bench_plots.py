"""bench's plots, for its HTML page, from its document alone: the cost against input length (each sample's runtime
against its audio seconds, with the line ``speechperf.length_cost`` fitted, as kept in ``length_fit``) and each
stage's per-sample runtimes as a box plot. A document of ``bench --runs N`` has none: its ``result`` is run 1's.

matplotlib is the ``plot`` extra: without it there are no plots, and a note says how to install it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from statistics import median
from typing import Any

import attrs

from speechperf.extras import MissingExtraError, require
from speechperf.length_cost import LengthFit
from speechperf.outputs import save_figure
from speechperf.results import Document

log = logging.getLogger(__name__)


def draw(doc: Document, folder: Path) -> list[Path]:
    """The PNG files of ``doc``'s plots, written in ``folder``: those that have something to show."""
    if (doc.get("process_runs") or 1) > 1:
        return []
    try:
        matplotlib = require("matplotlib", "the plots of --html")
    except MissingExtraError as exc:
        log.info("note: %s", exc)
        return []
    matplotlib.use("Agg")  # no display: files only
    drawn = (length_plot(doc, folder / "bench-length.png"), box_plot(doc, folder / "bench-runtime.png"))
    return [p for p in drawn if p is not None]


def _result(doc: Document) -> dict[str, Any]:
    result = doc.get("result")
    return result if isinstance(result, dict) else {}


def sample_seconds(stage: dict[str, Any]) -> dict[str, float]:
    """A stage's per-sample runtimes (seconds): each sample's median over its repeats, as the rows take them."""
    samples = (stage.get("runtime") or {}).get("samples") or ()
    return {s["sample_id"]: median(s["ns"]) / 1e9 for s in samples if s.get("ns")}


def stage_name(stage: dict[str, Any]) -> str:
    return f"stage{stage['index']} {stage['role']}"


def _length_points(doc: Document) -> dict[str, tuple[list[float], list[float]]]:
    """Per stage with an audio side: each timed sample's audio seconds and runtime (ms)."""
    out = {}
    for s in _result(doc).get("stages") or ():
        audio = (s.get("rtf") or {}).get("audio_per_sample") or {}
        timed = sample_seconds(s)
        ids = [k for k in timed if k in audio]
        if ids:
            out[stage_name(s)] = ([audio[k] for k in ids], [timed[k] * 1e3 for k in ids])
    return out


def length_fit(doc: Document, stage: str) -> LengthFit | None:
    """The fit the run kept for ``stage`` (``length_fit``); None when it kept none."""
    kept = (doc.get("length_fit") or {}).get(stage)
    if not isinstance(kept, dict):
        return None
    known = {f.name for f in attrs.fields(LengthFit)}
    return LengthFit(**{k: v for k, v in kept.items() if k in known})


def length_plot(doc: Document, path: Path) -> Path | None:
    """One panel per stage: its samples, and the fitted line over them (or, in the legend, why there is none)."""
    import matplotlib.pyplot as plt

    points = _length_points(doc)
    if not points:
        return None
    result = _result(doc)
    fig, axes = plt.subplots(1, len(points), figsize=(6 * len(points), 4.5), squeeze=False)
    for ax, (stage, (seconds, ms)) in zip(axes[0], points.items()):
        found = length_fit(doc, stage)
        draw_fit(ax, seconds, ms, found, f"{len(ms)} sample(s)")
        ax.set_xlabel(f"{stage}: {(found and found.audio) or 'audio'} audio seconds")
        ax.set_ylabel("per-sample runtime (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"speechperf bench: {result.get('model_type')} on {result.get('backend')}: cost against input length")
    return save_figure(fig, path, "--html")


def draw_fit(ax, seconds, ms, found: LengthFit | None, name: str) -> None:
    """The samples as dots over input seconds and, where ``length_cost`` found a fit, its line in their colour,
    labelled ``name`` with the fit's figures (or why there is none); bench's and compare's length plots."""
    dots = ax.scatter(seconds, ms, s=18, alpha=0.8)
    if found is None or found.reason or found.fixed_ms is None or found.ms_per_audio_s is None:
        dots.set_label(f"{name} (no fit: {found.reason if found else 'none kept'})")
        return
    xs = [min(seconds), max(seconds)]
    ax.plot(
        xs,
        [found.fixed_ms + found.ms_per_audio_s * x for x in xs],
        color=dots.get_facecolor()[0],
        label=f"{name}: {found.ms_per_audio_s:.2f} ms/s, fixed {found.fixed_ms:.2f} ms, k={found.exponent:.2f}",
    )


def box_plot(doc: Document, path: Path) -> Path | None:
    """A box per stage (and the total of a cascade) of its per-sample runtimes, each sample a dot over it."""
    import matplotlib.pyplot as plt

    result = _result(doc)
    stages = list(result.get("stages") or ())
    series = {stage_name(s): [v * 1e3 for v in sample_seconds(s).values()] for s in stages if sample_seconds(s)}
    total = (result.get("totals") or {}).get("per_sample_s") or {}
    if len(stages) > 1 and total:
        series["total"] = [v * 1e3 for v in total.values()]
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 2.0 * len(series)), 4.5))  # wide enough for its title
    ax.boxplot(list(series.values()), showfliers=False)
    ax.set_xticks(range(1, len(series) + 1), list(series))
    for i, values in enumerate(series.values(), 1):
        ax.scatter([i] * len(values), values, s=12, alpha=0.6, color="black", zorder=3)
    ax.set_ylabel("per-sample runtime (ms)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{result.get('model_type')} on {result.get('backend')}: per-sample runtime")
    return save_figure(fig, path, "--html")
