"""What ``speechperf compare`` prints and exports: a hyperfine-style block per cell, the ranking, the parity of
the outputs, the failed runs with their reasons; JSON (every raw timing), CSV and Markdown with a backend column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from speechperf import length_cost, stats, tables
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

UNIT_NOTE = (
    "statistical unit: one process run (the mean per-sample runtime of the run); mean ± σ, range, ratios "
    "and Welch's p are over the runs; median / p90 / p99 over every sample of every run"
)
#: a cell's headline quality metric -> its figure's name in the rows (speechperf.results.figures: WER and
#: agreement as fractions, BLEU in points)
QUALITY_FIGURES = {"WER": "wer", "BLEU": "bleu", "ASR-BLEU": "bleu", "agreement": "agreement"}
COLUMNS = (
    "cell",
    "backend",
    "threads",
    "params",
    "runs_ok",
    "runs_failed",
    "mean_ms",
    "stdev_ms",
    "min_ms",
    "max_ms",
    "median_ms",
    "p90_ms",
    "p99_ms",
    "batch_size",
    "batch_latency_mean_ms",
    "samples_per_s",
    "audio_s_per_s",
    "first_call_new_shape_extra",
    "first_call_new_shape_detected",
    "rtf",
    "rtf_audio",
    "peak_rss_mib",
    "gflops_per_sample",
    "flops_source",
    *roofline.COLUMNS,
    "ratio",
    "ratio_sigma",
    "speedup_vs_1t",
    "efficiency",
    "p_value",
    "parity",
    "batch_parity",
    "quality",
    "quality_metric",
    *dict.fromkeys(QUALITY_FIGURES.values()),
    "quality_vs_reference",
    "failure",
)


@attrs.frozen
class CompareReport:
    cells: tuple[Cell, ...]
    results: tuple[RunResult, ...]
    summaries: tuple[summ.CellSummary, ...]
    rankings: tuple[tuple[stats.Comparison, ...], ...]
    parity: dict[str, CellParity]
    environment_notes: tuple[str, ...]
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
            tuple(summ.environment_differences(summaries)),
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

    @property
    def table_warnings(self) -> list[str]:
        """The lines the console prints under the table: parity mismatches, quality that differs from the
        reference's and quality notes, differing environments."""
        lines = [
            f"parity MISMATCH: {p.label} against {p.reference}: {p.describe()}"
            for p in self.parity.values()
            if p.mismatch
        ]
        lines += [
            f"batch parity MISMATCH: {p.label} against {p.reference}: {p.describe()}"
            for p in self.batch_parity.values()
            if p.mismatch
        ]
        for q in self.quality.values():
            if q.differs:
                lines.append(f"quality {q.differs}")
            if q.note:
                lines.append(f"quality: {q.label}: {q.note}")
        return lines + [f"warning: the children's environments differ: {note}" for note in self.environment_notes]

    @property
    def warnings(self) -> list[str]:
        """Every warning the console prints (a cell's outliers in its block, then those under the table), for the
        JSON."""
        outliers = [f"{s.label}: Warning: {s.outlier_warning}" for s in self.summaries if s.ok and s.outlier_warning]
        return outliers + self.table_warnings

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
    return Document(
        kind="compare",
        config=config,
        rows=rows(report),
        warnings=report.warnings,
        complete=complete,
        body=body(report, options, runs),
    )


def _run_json(report: CompareReport, result: RunResult) -> dict[str, Any]:
    """One child run: how it ended, the environment it recorded and its raw timings."""
    summary = next((s for s in report.summaries if s.label == result.label), None)
    placed = [] if summary is None else list(zip(summary.environments, summary.runs, strict=True))
    mine = next(((env, raw) for env, raw in placed if raw["run"] == result.run), (None, None))
    return {**result.to_dict(), "environment": mine[0], "timings": mine[1]}


def sentences(report: CompareReport) -> list[str]:
    """The Summary sentences the console prints ("a ran 2.31 ± 0.12 times faster than b")."""
    return [c.sentence() for ranking in report.rankings for c in ranking]


def _fmt_ms(seconds: float | None) -> str:
    return stats.mean_sigma(_ms(seconds, None), None, "ms")


def _vs_fastest(report: CompareReport, label: str) -> str:
    """The table's ratio, written by the same formatter as the Summary sentences (``1.69 ± 0.28x``)."""
    if report.is_fastest(label):
        return "fastest"
    comparison = report.comparison_of(label)
    return "-" if comparison is None else comparison.ratio.text() + "x"


def render(report: CompareReport) -> str:
    """What the command prints, in hyperfine's layout: a block per cell, then the ranking, then a table with
    everything, parity and failures."""
    lines: list[str] = []
    say = lines.append
    say(UNIT_NOTE)
    for s in report.summaries:
        runs = len(s.run_values) + len(s.failures)
        say(f"\nCell: {s.label} ({len(s.run_values)} of {runs} runs finished, {s.cell.threads} thread(s))")
        if not s.ok:
            say("  no run finished")
        else:
            time = stats.mean_sigma(_ms(s.mean, None), _ms(s.stdev, None), "ms")
            time += " (one run: no σ)" if s.stdev is None else ""
            say(f"  Time (mean ± σ):     {time}")
            say(
                f"  Range (min … max):   {_fmt_ms(min(s.run_values))} … {_fmt_ms(max(s.run_values))}    "
                f"{len(s.run_values)} runs"
            )
            say(
                f"  Per sample:          median {_fmt_ms(s.percentile(50))}, p90 {_fmt_ms(s.percentile(90))}, "
                f"p99 {_fmt_ms(s.percentile(99))}    {len(s.per_sample)} sample timings"
            )
        for failure in s.failures:
            say(
                f"  run {failure.run + 1} FAILED: {failure.reason} (exit code {failure.exit_code}; "
                f"stderr: {failure.stderr_path})"
            )
        if s.ok and s.outlier_warning:
            say(f"  Warning: {s.outlier_warning}")
    for ranking in report.rankings:
        if ranking:
            say("\nSummary")
            for comparison in ranking:
                say(f"  {comparison.sentence()}")
    headers = (
        "cell",
        "runs ok/failed",
        "mean ± σ (ms)",
        "median",
        "p90",
        "p99",
        "batch",
        "ms/batch",
        "samples/s",
        "audio s/s",
        "1st call, new shape",
        "RTF",
        "peak RSS (MiB)",
        "GFLOPs/sample",
        "GFLOP/s (roofline)",
        "vs fastest",
        *(("speed-up", "efficiency") if report.scaling else ()),
        "parity",
        "quality",
    )
    table = [
        (
            row["cell"],
            f"{row['runs_ok']}/{row['runs_failed']}",
            stats.mean_sigma(_ms(s.mean, None), _ms(s.stdev, None)),  # from the unrounded values, like the ratio
            *(row[k] for k in ("median_ms", "p90_ms", "p99_ms")),
            *(row[k] for k in ("batch_size", "batch_latency_mean_ms", "samples_per_s", "audio_s_per_s")),
            first_call.cell(row),
            *(row[k] for k in ("rtf", "peak_rss_mib", "gflops_per_sample")),
            roofline.cell(row),
            _vs_fastest(report, s.label),
            *((row["speedup_vs_1t"], row["efficiency"]) if report.scaling else ()),
            "; ".join(p for p in (row["parity"], row["batch_parity"]) if p) or None,
            report.quality[row["cell"]].describe() if row["cell"] in report.quality else None,
        )
        for s, row in zip(report.summaries, rows(report), strict=True)
    ]
    # A column no cell has a value in (FLOPs not counted, no quality scored) only takes width from the others.
    keep = [i for i, h in enumerate(headers) if i < 3 or any(row[i] not in (None, "-", "") for row in table)]
    shown: tuple[str, ...] = tuple(headers[i] for i in keep)
    table = [tuple(row[i] for i in keep) for row in table]
    say("")
    say(tables.render_table("speechperf compare", shown, table, left=("cell", "parity", "quality")).rstrip("\n"))
    for line in report.table_warnings:
        say(line)
    for s in report.summaries:
        for name, found in summ.length_fits(s).items() if s.ok else ():
            say(f"cost against input length, {s.label}, {name}: {found.text()}")
    return "\n".join(lines) + "\n"
