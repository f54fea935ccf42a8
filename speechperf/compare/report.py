"""``speechperf compare``'s result document (docs/results.md): one row per cell, the ranking, the parity of the
outputs, the quality, the failed runs with their reasons and every raw timing; the console, Markdown, CSV and HTML
are rendered from it by ``speechperf.views.compare``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from speechperf import length_cost, stats
from speechperf.compare import summary as summ
from speechperf.compare.parity import CellParity, batch_parity, group_parity
from speechperf.compare.quality import CellQuality, group_quality
from speechperf.compare.scaling import Scaling
from speechperf.compare.scaling import scaling as cell_scaling
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.meters import first_call, roofline
from speechperf.meters.fidelity import json_number
from speechperf.results import Document
from speechperf.views import compare as view
from speechperf.views.compare import COLUMNS, QUALITY_FIGURES, UNIT_NOTE

__all__ = ["COLUMNS", "QUALITY_FIGURES", "UNIT_NOTE", "CompareReport", "document", "rows"]


@attrs.frozen
class CompareReport:
    cells: tuple[Cell, ...]
    results: tuple[RunResult, ...]
    summaries: tuple[summ.CellSummary, ...]
    rankings: tuple[tuple[stats.Comparison, ...], ...]
    parity: dict[str, CellParity]
    quality: dict[str, CellQuality] = attrs.Factory(dict)
    #: a batch_size sweep: each cell against the same cell at the smallest batch size swept
    batch_parity: dict[str, CellParity] = attrs.Factory(dict)
    scaling: dict[str, Scaling] = attrs.Factory(dict)  # with --threads 1,N: each cell against its 1-thread cell

    @classmethod
    def build(
        cls, cells: Sequence[Cell], results: Sequence[RunResult], tolerances: dict | None = None
    ) -> CompareReport:
        """``tolerances``: stage (``stage1``) -> its ``tolerance`` key, for the float outputs' parity."""
        summaries = summ.summarize(cells, results)
        parity: dict[str, CellParity] = {}
        quality: dict[str, CellQuality] = {}
        for group in summ.groups(summaries):
            if len({s.cell.backend for s in group}) > 1:  # outputs are compared between backends, not presets
                parity.update(group_parity([s.label for s in group], results, tolerances))
            quality.update(group_quality([s.label for s in group], results))
        return cls(
            tuple(cells),
            tuple(results),
            tuple(summaries),
            tuple(tuple(r) for r in summ.rankings(summaries)),
            parity,
            quality,
            batch_parity(cells, results, tolerances),
            cell_scaling(summaries),
        )

    @property
    def failed(self) -> list[RunResult]:
        return [f for s in self.summaries for f in s.failures]

    @property
    def mismatched(self) -> list[str]:
        """The cells whose outputs differ from their group's reference: a check that failed (compare exits 1)."""
        return [label for label, p in self.parity.items() if p.mismatch]

    def comparison_of(self, label: str) -> stats.Comparison | None:
        return next((c for ranking in self.rankings for c in ranking if c.slow == label), None)

    def is_fastest(self, label: str) -> bool:
        return any(ranking and ranking[0].fast == label for ranking in self.rankings)


def _ms(value: float | None, digits: int | None = 3) -> float | None:
    """Seconds to milliseconds, rounded to ``digits`` (None: unrounded, for a formatter that rounds itself)."""
    if value is None:
        return None
    return value * 1e3 if digits is None else round(value * 1e3, digits)


def rows(report: CompareReport) -> list[dict[str, Any]]:
    out = []
    for s in report.summaries:
        comparison = report.comparison_of(s.label)
        parity = report.parity.get(s.label)
        batched = report.batch_parity.get(s.label)
        quality = report.quality.get(s.label)
        scaled = report.scaling.get(s.label)
        out.append(
            {
                "cell": s.label,
                "backend": s.cell.backend,
                "threads": s.cell.threads,
                "params": " ".join(f"{k}={v}" for k, v in s.cell.params),
                "runs_ok": len(s.run_values),
                "runs_failed": len(s.failures),
                "mean_ms": _ms(s.mean),
                "stdev_ms": _ms(s.stdev),
                "min_ms": _ms(min(s.run_values)) if s.ok else None,
                "max_ms": _ms(max(s.run_values)) if s.ok else None,
                "median_ms": _ms(s.percentile(50)),
                "p90_ms": _ms(s.percentile(90)),
                "p99_ms": _ms(s.percentile(99)),
                "batch_size": s.batch_size,
                "batch_latency_mean_ms": _ms(s.batch_latency),
                "samples_per_s": None if s.samples_per_s is None else round(s.samples_per_s, 3),
                "audio_s_per_s": None if s.audio_s_per_s is None else round(s.audio_s_per_s, 3),
                **first_call.columns(s.first_call_per_shape),
                "rtf": None if s.rtf is None else round(s.rtf, 5),
                "rtf_audio": s.rtf_audio,
                "peak_rss_mib": None if s.peak_mib is None else round(s.peak_mib, 1),
                "gflops_per_sample": None if s.flops_per_sample is None else round(s.flops_per_sample / 1e9, 4),
                "flops_source": s.flops_source,
                **(s.roofline.get("total") or dict.fromkeys(roofline.COLUMNS)),
                "ratio": 1.0
                if report.is_fastest(s.label)
                else (round(comparison.ratio.value, 3) if comparison else None),
                "ratio_sigma": (
                    round(comparison.ratio.sigma, 3) if comparison and comparison.ratio.sigma is not None else None
                ),
                "p_value": None
                if comparison is None or comparison.p_value is None
                else float(f"{comparison.p_value:.3g}"),
                "speedup_vs_1t": None if scaled is None else round(scaled.speedup, 3),
                "efficiency": None if scaled is None else round(scaled.efficiency, 3),
                "parity": parity.describe() if parity else None,
                "batch_parity": f"against {batched.reference}: {batched.describe()}" if batched else None,
                "quality": quality.headline if quality else None,
                "quality_metric": quality.metric if quality else None,
                **quality_figures(quality),
                "quality_vs_reference": (quality.differs or quality.note) if quality else None,
                "failure": "; ".join(f"run {f.run + 1}: {f.reason} (exit code {f.exit_code})" for f in s.failures)
                or None,
            }
        )
    return out


def quality_figures(quality: CellQuality | None) -> dict[str, float | None]:
    """The headline quality under its figure's name: the JSON keeps a WER as a fraction (CellQuality's value is
    in points, as the console prints it)."""
    out: dict[str, float | None] = dict.fromkeys(QUALITY_FIGURES.values())
    if quality is not None and quality.value is not None and quality.metric in QUALITY_FIGURES:
        name = QUALITY_FIGURES[quality.metric]
        out[name] = round(quality.value, 2) if name == "bleu" else round(quality.value / 100, 6)
    return out


def _diff_json(diff) -> dict:
    """An output's parity in the JSON: identical-or-not for tokens, the float figures for float outputs."""
    data = attrs.asdict(diff)
    if diff.exact:
        return {k: v for k, v in data.items() if k not in ("max_rel", "snr_db", "cosine")}
    return {**data, "snr_db": json_number(diff.snr_db)}


def _parity_json(parity: dict[str, CellParity]) -> dict[str, Any]:
    return {
        label: {
            "reference": p.reference,
            "mismatch": p.mismatch,
            "note": p.note,
            "outputs": [_diff_json(d) for d in p.diffs],
        }
        for label, p in parity.items()
    }


def body(report: CompareReport, options: dict[str, Any], runs: int) -> dict[str, Any]:
    """The compare document's own fields (``speechperf.results.Document.body``); its rows are ``rows(report)``.
    ``options``: the command's options as given (click's parameters)."""
    return {
        "options": options,
        "statistical_unit": UNIT_NOTE,
        "runs_per_cell": runs,
        "cells": [
            {
                "label": c.label,
                "backend": c.backend,
                "threads": c.threads,
                "params": dict(c.params),
                "config": c.config if isinstance(c.config, dict) else (None if c.config is None else str(c.config)),
                "preset": c.preset,
                "sets": list(c.sets),
                "args": list(c.args),
            }
            for c in report.cells
        ],
        "roofline": {
            "label": roofline.LABEL,
            "per_stage": {s.label: s.roofline for s in report.summaries},
        },
        "comparisons": [
            [
                {
                    "fast": c.fast,
                    "slow": c.slow,
                    "ratio": c.ratio.value,
                    "sigma": c.ratio.sigma,
                    "p_value": c.p_value,
                    "significant": c.significant,
                    "sentence": c.sentence(),
                }
                for c in ranking
            ]
            for ranking in report.rankings
        ],
        "parity": _parity_json(report.parity),
        "batch_parity": _parity_json(report.batch_parity),
        "quality": {label: attrs.asdict(q) for label, q in report.quality.items()},
        "length_fit": {
            s.label: {name: length_cost.to_json(f) for name, f in summ.length_fits(s).items()}
            for s in report.summaries
            if s.ok
        },
        "runs": [_run_json(report, r) for r in report.results],
    }


def document(
    report: CompareReport, config: dict[str, Any] | None, options: dict[str, Any], runs: int, complete: bool
) -> Document:
    """The ``compare`` result document (docs/results.md): the rows of the table, every warning the console
    printed, and the rest in the body; the command adds its environment, notes and, with --best, the search."""
    doc = Document(
        kind="compare", config=config, rows=rows(report), complete=complete, body=body(report, options, runs)
    )
    doc.warnings = view.warnings(doc)  # as the console prints them, from the document
    return doc


def _run_json(report: CompareReport, result: RunResult) -> dict[str, Any]:
    """One child run: how it ended (a run that did not count, such as one whose JSON cannot be read, as the failure
    it was counted as, with its reason), the environment it recorded and its raw timings (None: it did not count)."""
    summary = next((s for s in report.summaries if s.label == result.label), None)
    placed = [] if summary is None else list(zip(summary.environments, summary.runs, strict=True))
    mine = next(((env, raw) for env, raw in placed if raw["run"] == result.run), (None, None))
    failed = [] if summary is None else [f for f in summary.failures if f.run == result.run]
    return {**(failed[0] if failed else result).to_dict(), "environment": mine[0], "timings": mine[1]}
