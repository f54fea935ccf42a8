"""The terminal table of a benchmark: by default the columns a reader needs first (stage, model, runtime mean ± σ,
p90, RTF, peak RSS, GFLOPs, quality), fitted to the terminal's width; ``--wide`` every column, as wide as it takes.
Every column is in the exports whichever is printed (``speechperf.benchmark.report.COLUMNS``)."""

from __future__ import annotations

import sys
from typing import Any

from speechperf import stats, tables
from speechperf.benchmark import report
from speechperf.benchmark.results import BenchResult
from speechperf.meters import first_call, roofline
from speechperf.results.figures import shown

#: Whose audio an RTF divides by, in the key columns: a TTS stage's is its output's.
SIDE = {"input": "in", "output": "out"}


def print_table(result: BenchResult, file=None, wide: bool = False, width: int | None = None) -> None:
    """The table on ``file`` (stdout): fitted to ``width`` (default: the terminal's, ``tables.terminal_width``)
    unless ``wide``."""
    file = file or sys.stdout
    file.write(render(result, wide=wide, width=width or tables.terminal_width(file)))


def render(result: BenchResult, wide: bool = False, width: int = tables.NOT_A_TERMINAL) -> str:
    rows = report.rows(result)
    if wide:
        headers, cells = _wide(rows, result.hybrid)
        return tables.render_table(title(result), headers, cells, left=("stage", "model"))
    headers, cells = _key(rows, result.hybrid)
    left, wrap = ("stage", "backend", "model", "quality"), ("model", "quality")
    return tables.render_table(title(result), headers, cells, left=left, width=width, wrap=wrap)


def title(result: BenchResult) -> str:
    hybrid = result.hybrid  # some stage pinned to another backend: each row says where it ran
    pinned = ", ".join(
        f"stage{s.index} on {s.backend}" for s in result.stages if s.backend not in (None, result.backend)
    )
    return (
        f"speechperf bench: {result.model_type} on {result.backend}/{result.device}"
        + (f" ({pinned}, pinned)" if hybrid else "")
        + f", {result.threads} thread(s), warmup {result.warmup}"
        + (" and per shape" if result.warmup_per_shape else "")
        + f", repeat {result.repeat}"
        + (f", batch size {result.batch_size}" if result.batch_size > 1 else "")
    )


def _key(rows: list[dict[str, Any]], hybrid: bool) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The columns a reader needs first, with short two-line headers; ok/failed only when a sample failed (the
    failures are listed below the table)."""
    failed = any(row["failed"] for row in rows)
    headers = (
        "stage",
        *(("backend",) if hybrid else ()),
        "model",
        *(("ok/failed",) if failed else ()),
        "runtime (ms)\nmean ± σ",
        "p90\n(ms)",
        "RTF\n(audio)",
        "peak RSS\n(MiB)",
        "GFLOPs\n/sample",
        "quality",
    )
    cells = [
        (
            row["stage"],
            *((row["backend"],) if hybrid else ()),
            row["model"],
            *((f"{_cell(row['ok'])}/{row['failed']}",) if failed else ()),
            stats.mean_sigma(row["mean_ms"], row["stdev_ms"]),
            shown("p90_ms", row["p90_ms"]),
            "-" if row["rtf"] is None else f"{row['rtf']:.4f} {SIDE.get(row['rtf_audio'], row['rtf_audio'])}",
            shown("peak_rss_mib", row["peak_rss_mib"]),
            "-" if row["gflops_per_sample"] is None else f"{row['gflops_per_sample']:.4f}",
            row["quality"],
        )
        for row in rows
    ]
    return headers, cells


def _wide(rows: list[dict[str, Any]], hybrid: bool) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Every column of the console (``--wide``): runtime mean ± σ, median, p90 (ms), batches, throughput, the first
    call on a new shape, RTF, peak RSS and footprint (MiB), GFLOPs per sample and their roofline, quality."""
    headers = (
        "stage",
        *(("backend",) if hybrid else ()),
        "model",
        "ok/failed",
        "runtime (ms) mean ± σ",
        "median",
        "p90",
        "batch",
        "ms/batch",
        "samples/s",
        "audio s/s",
        "1st call, new shape",
        "RTF",
        "peak RSS (MiB)",
        "footprint (MiB)",
        "GFLOPs/sample",
        "GFLOP/s (roofline)",
        "quality",
    )
    cells = [
        (
            row["stage"],
            *((row["backend"],) if hybrid else ()),
            row["model"],
            f"{_cell(row['ok'])}/{row['failed']}",
            stats.mean_sigma(row["mean_ms"], row["stdev_ms"]),
            row["median_ms"],
            row["p90_ms"],
            row["batch_size"],
            row["batch_latency_mean_ms"],
            row["samples_per_s"],
            row["audio_s_per_s"],
            first_call.cell(row),
            _rtf(row),
            row["peak_rss_mib"],
            row["footprint_mib"],
            "-" if row["gflops_per_sample"] is None else f"{row['gflops_per_sample']:.4f} ({row['flops_source']})",
            roofline.cell(row),
            row["quality"],
        )
        for row in rows
    ]
    return headers, cells


def _rtf(row: dict[str, Any]) -> str:
    """``0.0043 (input)``: the RTF and whose audio it divides by (a TTS stage's is its output's)."""
    return "-" if row["rtf"] is None else f"{row['rtf']:.4f} ({row['rtf_audio']})"


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)
