"""The Pareto plot of ``speechperf tune``: every pipeline run whole, its quality and its peak memory against the
objective, the front marked and joined, the winner starred, the reference in black."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from speechperf.tune.combine import Pipeline

AXIS = {"latency": "latency per sample (ms)", "throughput": "samples / s", "memory": "peak RSS (MiB)"}


def _x(p: Pipeline, objective: str) -> float | None:
    if objective == "throughput":
        return p.samples_per_s
    if objective == "memory":
        return p.peak_mib
    return None if p.mean_s is None else p.mean_s * 1e3


def plot_front(
    reference: Pipeline | None,
    pipelines: Sequence[Pipeline],
    objective: str,
    path: Path,
    title: str,
    budget_line: float | None = None,
) -> Path:
    """``budget_line``: the quality the budget allows (the reference's WER + --max-wer-increase, its BLEU -
    --max-bleu-drop), drawn as a red dashed line on the quality panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = next((p.metric for p in pipelines if p.metric), None)
    panels = [("quality", f"{metric} ({'%' if metric == 'WER' else 'points'})" if metric else None),
              ("memory", "peak RSS (MiB)")]  # fmt: skip
    panels = [(k, label) for k, label in panels if label is not None]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
    for ax, (kind, label) in zip(axes[0], panels):
        for p in [*pipelines, *([reference] if reference is not None and reference.mean_s is not None else [])]:
            x = _x(p, objective)
            y = p.value if kind == "quality" else p.peak_mib
            if x is None or y is None:
                continue
            is_ref = p is reference
            style = dict(marker="o", color="tab:gray", alpha=0.6, s=30)
            if p.front:
                style = dict(marker="o", color="tab:blue", s=50)
            if p.status == "winner":
                style = dict(marker="*", color="tab:red", s=220)
            if is_ref:
                style = dict(marker="s", color="black", s=50)
            ax.scatter([x], [y], zorder=3, **style)
            if p.front or is_ref or p.status == "winner":
                name = "reference (fp32)" if is_ref else p.name
                ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        pts = sorted(
            (x, y)
            for p in pipelines
            if p.front
            and (x := _x(p, objective)) is not None
            and (y := p.value if kind == "quality" else p.peak_mib) is not None
        )
        if len(pts) > 1:
            ax.plot(*zip(*pts), color="tab:blue", linewidth=1, zorder=2, label="Pareto front")
        if kind == "quality" and budget_line is not None:
            ax.axhline(budget_line, color="tab:red", linestyle="--", linewidth=1, label="quality budget")
            ax.legend(fontsize=7, loc="best")
        ax.set_xlabel(AXIS[objective])
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    fig.suptitle(title + "\n(red star: the winner within the quality budget; blue: the Pareto front)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
