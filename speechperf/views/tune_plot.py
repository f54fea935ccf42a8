"""The Pareto plot of ``speechperf tune``: every pipeline run whole, its quality and its peak memory against the
objective, the front marked and joined, the winner starred, the reference in black. Drawn from the document's end to
end rows (``mean_ms``, ``samples_per_s``, ``peak_rss_mib``, ``metric``, ``value``, ``front``, ``status``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Row = Mapping[str, Any]

AXIS = {"latency": "latency per sample (ms)", "throughput": "samples / s", "memory": "peak RSS (MiB)"}


def _x(p: Row, objective: str) -> float | None:
    if objective == "throughput":
        return p.get("samples_per_s")
    if objective == "memory":
        return p.get("peak_rss_mib")
    return p.get("mean_ms")


def _y(p: Row, kind: str) -> float | None:
    return p.get("value") if kind == "quality" else p.get("peak_rss_mib")


def plot_front(
    reference: Row | None,
    pipelines: Sequence[Row],
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

    metric = next((p.get("metric") for p in pipelines if p.get("metric")), None)
    panels = [("quality", f"{metric} ({'%' if metric == 'WER' else 'points'})" if metric else None),
              ("memory", "peak RSS (MiB)")]  # fmt: skip
    panels = [(k, label) for k, label in panels if label is not None]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
    for ax, (kind, label) in zip(axes[0], panels):
        for p in [*pipelines, *([reference] if reference is not None and reference.get("mean_ms") is not None else [])]:
            x, y = _x(p, objective), _y(p, kind)
            if x is None or y is None:
                continue
            is_ref = p is reference
            style = dict(marker="o", color="tab:gray", alpha=0.6, s=30)
            if p.get("front"):
                style = dict(marker="o", color="tab:blue", s=50)
            if p.get("status") == "winner":
                style = dict(marker="*", color="tab:red", s=220)
            if is_ref:
                style = dict(marker="s", color="black", s=50)
            ax.scatter([x], [y], zorder=3, **style)
            if p.get("front") or is_ref or p.get("status") == "winner":
                name = "reference (fp32)" if is_ref else p["candidate"]
                ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        pts = sorted(
            (x, y)
            for p in pipelines
            if p.get("front") and (x := _x(p, objective)) is not None and (y := _y(p, kind)) is not None
        )
        if len(pts) > 1:
            ax.plot(*zip(*pts), color="tab:blue", linewidth=1, zorder=2, label="Pareto front")
        if kind == "quality" and budget_line is not None:
            ax.axhline(budget_line, color="tab:red", linestyle="--", linewidth=1, label="quality budget")
            ax.legend(fontsize=7, loc="best")
        _axes(ax, AXIS[objective], label)
    return _saved(fig, path, title + "\n(red star: the winner within the quality budget; blue: the Pareto front)")


def _axes(ax, xlabel: str, ylabel: str | None) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)


def _saved(fig, path: Path, title: str) -> Path:
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_serving(measured: Sequence[Row], serving: Row, path: Path, title: str) -> Path:
    """``tune --objective server``: each peak search's completed samples/s against the latency percentile at its
    peak, the screened and confirmed configurations (the front joined, the winner starred) and the final compare's
    cells, one point a search."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bound = serving.get("latency") or {}
    front = set(serving.get("front") or ())
    winner = (serving.get("winner") or {}).get("name")
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors: dict[str, str] = {}
    for m in measured:
        x, y = m["latency_ms"], m["completed_qps"]
        if str(m.get("phase", "")).startswith("final"):
            first = m["name"] not in colors
            color = colors.setdefault(m["name"], f"C{len(colors) % 10}")
            ax.scatter(
                [x], [y], marker="x", color=color, s=40, zorder=3, label=f"final: {m['name']}" if first else None
            )
            continue
        style: dict[str, Any] = dict(marker="o", color="tab:gray", alpha=0.6, s=30)
        if m["name"] in front:
            style = dict(marker="o", color="tab:blue", s=50)
        if m["name"] == winner:
            style = dict(marker="*", color="tab:red", s=220)
        ax.scatter([x], [y], zorder=3, **style)
        ax.annotate(f"{m['name']} ({m.get('phase')})", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if bound.get("bound_ms"):
        ax.axvline(bound["bound_ms"], color="tab:red", linestyle="--", linewidth=1, label="latency bound")
    ax.legend(fontsize=7, loc="best")
    _axes(ax, f"p{bound.get('percentile', 99):g} latency at the peak (ms)", "completed samples / s (MLPerf Server)")
    return _saved(fig, path, title + "\n(red star: the winner; blue: the front; x: the final compare's searches)")
