"""Reports of a benchmark: the table (stdout), JSON with every raw timing, CSV and Markdown exports.

The JSON carries a schema version, the environment (package versions, CPU, threads, device, git commit) and the
merged config, and is written atomically (a temporary file renamed over the target), so a reader never sees a
half-written file and an interrupted run leaves the last complete snapshot.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import attrs

from speechperf import length_cost, stats, tables
from speechperf.benchmark.results import SCHEMA_VERSION, BenchResult
from speechperf.meters import first_call, roofline
from speechperf.outputs import write_text_atomic
from speechperf.results.environment import git_state

PACKAGES = (
    "speechperf",
    "numpy",
    "torch",
    "paddlepaddle",
    "onnxruntime",
    "onnx",
    "paddle2onnx",
    "silero-vad",
    "soundfile",
    "soxr",
)
COLUMNS = (
    "backend",
    "stage",
    "model",
    "ok",
    "failed",
    "runtime_mean_ms",
    "runtime_stdev_ms",
    "runtime_median_ms",
    "runtime_p90_ms",
    "batch_size",
    "batch_latency_mean_ms",
    "batch_latency_p90_ms",
    "samples_per_s",
    "audio_s_per_s",
    "first_call_new_shape_pct",
    "first_call_new_shape_detected",
    "rtf",
    "rtf_audio",
    "peak_rss_mib",
    "footprint_mib",
    "gflops_per_sample",
    "flops_source",
    *roofline.COLUMNS,
    "quality",
    "wer",
    "cer",
    "bleu",
    "chrf",
    # the run's context, so that an exported row stands on its own
    "threads",
    "warmup",
    "repeat",
    "load_s",
    "first_call_s",
    "flops_uncounted",
)


def environment(threads: int, device: str, backend_name: str, backend_version: str | None) -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:  # read from the installed metadata: nothing is imported
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "device": device,
        "backend": backend_name,
        "backend_version": backend_version,
        "packages": versions,
        "git_commit": _git_commit(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    """The commit of the speechperf checkout in use, with ``-dirty`` when it has changes; None if not in git."""
    commit, dirty = git_state(Path(__file__).resolve().parent)
    return None if commit is None else commit + ("-dirty" if dirty else "")


def _plain(value: Any) -> Any:
    """attrs objects, tuples and numpy scalars as JSON values."""
    if attrs.has(type(value)):
        data = {f.name: _plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
        for prop in (
            "stats",
            "noise",
            "noise_warning",
            "first_call_per_shape",
            "peak_mib",
            "footprint_mib",
            "device_peak_mib",
            "seconds",
            "delta_mib",
            "latency",
            "samples_per_s",
        ):
            if hasattr(type(value), prop) and isinstance(getattr(type(value), prop), property):
                data[prop] = _plain(getattr(value, prop))
        return data
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no inf/nan; an infinite RTFx of a zero runtime is "not measurable"
    return value


def to_json(result: BenchResult, config: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "complete": result.complete,
        "environment": env,
        "config": _plain(config),
        "result": _plain(result),
        "summary": rows(result),
        "length_fit": {name: length_cost.to_json(f) for name, f in length_fits(result).items()},
    }


def length_fits(result: BenchResult) -> dict[str, length_cost.LengthFit]:
    """Per stage (``stage1 s2t``): its per-sample runtimes against the audio seconds its RTF divides by."""
    fits = {}
    for s in result.stages:
        name = f"stage{s.index} {s.role}"
        if s.runtime is None or s.rtf is None:
            fits[name] = length_cost.fit([], [], None)
            continue
        timed = s.runtime.per_sample_seconds
        ids = [k for k in timed if k in s.rtf.audio_per_sample]
        fits[name] = length_cost.fit([s.rtf.audio_per_sample[k] for k in ids], [timed[k] for k in ids], s.rtf.audio)
    return fits


def write_json_atomic(path: Path, data: dict[str, Any], what: str = "--output") -> None:
    write_text_atomic(path, json.dumps(data, indent=2, allow_nan=False, default=str) + "\n", what)


def rows(result: BenchResult) -> list[dict[str, Any]]:
    """One row per stage, then a ``total`` row (runtime and FLOPs summed over stages, memory max); each names the
    backend."""
    out = []
    for s in result.stages:
        summary = s.runtime.stats if s.runtime else None
        failed = len({f.sample_id for f in s.failures if f.meter != "flops"})  # FLOPs not counted is no failure
        out.append(
            _row(
                f"stage{s.index} {s.role}",
                s.label,
                len(s.runtime.samples) if s.runtime else None,
                failed,
                summary,
                s.rtf,
                s.memory.peak_mib if s.memory else None,
                s.memory.footprint_mib if s.memory else None,
                (s.flops.total / len(s.flops.per_sample)) if s.flops and s.flops.per_sample else None,
                s.flops.source if s.flops else None,
                s.runtime.first_call_per_shape if s.runtime else None,
                result.quality_of(s),
                s.batching,
                _throughput(s.runtime),
            )
        )
    t = result.totals
    out.append(
        _row(
            "total",
            result.model_type,
            len(t.per_sample_s),
            len(result.failed),
            t.runtime,
            t.rtf,
            t.peak_mib,
            t.footprint_mib,
            t.flops_per_sample,
            t.flops_source,
            t.first_call_per_shape,
            result.quality_of(None),
            t.batching,
            t.samples_per_s,
        )
    )
    for row, placement in zip(out, placements(result)):
        row.update(roofline.columns(placement))
    # The run's context on every row (cold start and uncounted ops per stage), so that exports of several runs
    # (torch, paddle, onnxruntime) can be concatenated and still be read.
    for row, s in zip(out, result.stages):
        row.update(
            load_s=round(s.load_s, 3),
            first_call_s=None if s.first_call_s is None else round(s.first_call_s, 3),
            flops_uncounted=" ".join(s.flops.uncounted) if s.flops and s.flops.uncounted else None,
        )
    context = {"threads": result.threads, "warmup": result.warmup, "repeat": result.repeat}
    # A stage pinned to another backend (stageN.backend) names its own; the total row names the run's.
    backends = [s.backend or result.backend for s in result.stages] + [result.backend]
    return [{"backend": name, **row, **context} for name, row in zip(backends, out)]


def placements(result: BenchResult) -> list[roofline.Placement | None]:
    """The roofline placement of each stage, then of the whole (FLOPs, runtime and traffic summed over stages per
    sample)."""
    out = [
        roofline.place_count(s.flops, s.runtime.per_sample_seconds if s.runtime else {}, result.roofs)
        for s in result.stages
    ]
    counts = [s.flops for s in result.stages]
    if all(c is not None and c.source == "analytic" and c.per_sample for c in counts) and result.totals.per_sample_s:
        flops: dict[str, int] = {}
        traffic: dict[str, int] = {}
        for c in counts:
            assert c is not None
            for k, v in c.per_sample.items():
                flops[k] = flops.get(k, 0) + v
            for k, v in c.traffic_per_sample.items():
                traffic[k] = traffic.get(k, 0) + v
        known = all(c is not None and c.parameters_known for c in counts)
        out.append(roofline.place(flops, result.totals.per_sample_s, traffic, result.roofs, known))
    else:
        out.append(None)
    return out


def _throughput(runtime) -> float | None:
    """Samples per second of a stage: its timed samples over their summed runtime."""
    if runtime is None or not runtime.samples or runtime.total_seconds <= 0:
        return None
    return len(runtime.samples) / runtime.total_seconds


def _row(
    stage,
    model,
    ok,
    failed,
    summary,
    rtf,
    peak,
    footprint,
    flops,
    source,
    shape_cost,
    quality=None,
    batches=None,
    samples_per_s=None,
) -> dict[str, Any]:
    ms = (lambda v: round(v * 1e3, 3)) if summary else (lambda v: None)
    latency = batches.latency if batches is not None else None
    return {
        "stage": stage,
        "model": model,
        "ok": ok,
        "failed": failed,
        "runtime_mean_ms": ms(summary.mean) if summary else None,
        "runtime_stdev_ms": ms(summary.stdev) if summary and summary.stdev is not None else None,
        "runtime_median_ms": ms(summary.median) if summary else None,
        "runtime_p90_ms": ms(summary.p90) if summary else None,
        "batch_size": batches.batch_size if batches is not None else None,
        "batch_latency_mean_ms": round(latency.mean * 1e3, 3) if latency else None,
        "batch_latency_p90_ms": round(latency.p90 * 1e3, 3) if latency else None,
        "samples_per_s": round(samples_per_s, 3) if samples_per_s is not None else None,
        "audio_s_per_s": round(rtf.audio_s_per_s, 3) if rtf and math.isfinite(rtf.audio_s_per_s) else None,
        **first_call.columns(shape_cost),
        "rtf": round(rtf.rtf, 5) if rtf else None,
        "rtf_audio": rtf.audio if rtf else None,
        "peak_rss_mib": round(peak, 1) if peak is not None else None,
        "footprint_mib": round(footprint, 1) if footprint is not None else None,
        "gflops_per_sample": round(flops / 1e9, 4) if flops is not None else None,
        "flops_source": source,
        **quality_columns(quality),
    }


def quality_columns(quality) -> dict[str, Any]:
    """The quality meter's columns of a row (speechperf.meters.quality.QualityScore, or None): its headline and
    WER / CER in percent, BLEU / chrF in points (ASR-BLEU in ``bleu`` for speech output)."""

    def pct(v):
        return None if v is None else round(100 * v, 2)

    def pts(v):
        return None if v is None else round(v, 2)

    if quality is None:
        return {"quality": None, "wer": None, "cer": None, "bleu": None, "chrf": None}
    return {
        "quality": quality.headline(),
        "wer": pct(quality.wer),
        "cer": pct(quality.cer),
        "bleu": pts(quality.bleu),
        "chrf": pts(quality.chrf),
    }


def to_csv(result: BenchResult) -> str:
    return tables.to_csv(COLUMNS, rows(result))


def to_markdown(result: BenchResult) -> str:
    return tables.to_markdown(COLUMNS, ([row.get(c) for c in COLUMNS] for row in rows(result)))


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def print_table(result: BenchResult, file=None) -> None:
    """The human table: runtime mean ± σ, median, p90 (ms), RTF, peak RSS and footprint (MiB), GFLOPs per sample."""
    hybrid = result.hybrid  # some stage pinned to another backend: each row says where it ran
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
    table = [
        (
            row["stage"],
            *((row["backend"],) if hybrid else ()),
            row["model"],
            f"{_cell(row['ok'])}/{row['failed']}",
            stats.mean_sigma(row["runtime_mean_ms"], row["runtime_stdev_ms"]),
            row["runtime_median_ms"],
            row["runtime_p90_ms"],
            row["batch_size"],
            row["batch_latency_mean_ms"],
            row["samples_per_s"],
            row["audio_s_per_s"],
            first_call.cell(row),
            "-" if row["rtf"] is None else f"{row['rtf']:.4f} ({row['rtf_audio']})",
            row["peak_rss_mib"],
            row["footprint_mib"],
            "-" if row["gflops_per_sample"] is None else f"{row['gflops_per_sample']:.4f} ({row['flops_source']})",
            roofline.cell(row),
            row["quality"],
        )
        for row in rows(result)
    ]
    pinned = ", ".join(
        f"stage{s.index} on {s.backend}" for s in result.stages if s.backend not in (None, result.backend)
    )
    title = (
        f"speechperf bench: {result.model_type} on {result.backend}/{result.device}"
        + (f" ({pinned}, pinned)" if hybrid else "")
        + f", {result.threads} thread(s), warmup {result.warmup}"
        + (" and per shape" if result.warmup_per_shape else "")
        + f", repeat {result.repeat}"
        + (f", batch size {result.batch_size}" if result.batch_size > 1 else "")
    )
    tables.print_table(title, headers, table, file or sys.stdout, left=("stage", "model"))
