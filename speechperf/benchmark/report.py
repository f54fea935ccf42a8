"""The rows and the result document of a benchmark (``Document(kind="bench")``, docs/results.md).

The rows are the table of the run, one per stage and a ``total`` row, with the figures named as every command names
them (``speechperf.results.figures``: ``mean_ms``, ``p90_ms``, ``wer`` as a fraction, ...); the document's body keeps
``result`` (every raw timing) and ``length_fit``. Its console table, exports and page are its view's
(``speechperf.views.bench``), from the document alone.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import median
from typing import Any

import attrs

from speechperf import length_cost
from speechperf.benchmark.results import BenchResult, StageResult
from speechperf.meters import first_call, roofline
from speechperf.outputs import write_text_atomic
from speechperf.results import Document
from speechperf.results.environment import machine
from speechperf.results.notes import Collected
from speechperf.views.bench import SPEECH_COLUMNS


def environment(threads: int, device: str, backend_name: str, backend_version: str | None) -> dict[str, Any]:
    """The machine (``speechperf.results.environment``) and how this run used it."""
    return {
        **machine(),
        "threads": threads,
        "device": device,
        "backend": backend_name,
        "backend_version": backend_version,
    }


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


def document(
    result: BenchResult, config: dict[str, Any], env: dict[str, Any], said: Collected | None = None
) -> Document:
    """The run's result document: its rows, ``result`` with every raw timing, the length fits; ``said``: the notes
    and warnings the console printed so far."""
    return Document(
        kind="bench",
        config=_plain(config),
        environment=env,
        rows=rows(result),
        notes=list(said.notes) if said else [],
        warnings=list(said.warnings) if said else [],
        complete=result.complete,
        body={
            "process_runs": 1,  # bench --runs N: N (speechperf.launch.bench_runs)
            "result": _plain(result),
            "length_fit": {name: length_cost.to_json(f) for name, f in length_fits(result).items()},
        },
    )


def unit_seconds(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per stage (``stage1 s2t``) and the ``total``: each sample's runtime in seconds (its median over the
    repeats), read from a bench document's ``result`` (any schema version ``speechperf.results`` reads): the
    figures diff tests and ``bench --runs`` keeps per run."""
    out = {}
    for stage in result["stages"]:
        samples = (stage.get("runtime") or {}).get("samples") or []
        out[f"stage{stage['index']} {stage['role']}"] = {s["sample_id"]: median(s["ns"]) / 1e9 for s in samples}
    out["total"] = dict(result["totals"]["per_sample_s"])
    return out


def length_fits(result: BenchResult) -> dict[str, length_cost.LengthFit]:
    """Per stage (``stage1 s2t``): its per-sample runtimes against the audio seconds its RTF divides by."""
    fits = {}
    for s in result.stages:
        name = f"stage{s.index} {s.role}"
        if s.runtime is None or s.rtf is None:
            fits[name] = length_cost.missing(_no_fit(s))
            continue
        timed = s.runtime.per_sample_seconds
        ids = [k for k in timed if k in s.rtf.audio_per_sample]
        fits[name] = length_cost.fit(
            [s.rtf.audio_per_sample[k] for k in ids], [timed[k] for k in ids], s.rtf.audio, s.padded_to_s
        )
    return fits


def _no_fit(s: StageResult) -> str:
    """Why a stage has no runtimes against audio seconds to fit: said as it is, not as its role's."""
    from speechperf.benchmark.stage import INPUT_AUDIO_ROLES, OUTPUT_AUDIO_ROLES

    if s.runtime is None:
        return "its runtime was not measured"
    if not s.runtime.samples:
        return "no sample of this stage was timed (every one failed; see the failures)"
    if s.role not in INPUT_AUDIO_ROLES + OUTPUT_AUDIO_ROLES:
        return "this stage's role has no audio side (neither input nor output speech)"
    return "no timed sample has audio seconds to divide by (no waveform came out, or no audio went in)"


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
        "mean_ms": ms(summary.mean) if summary else None,
        "stdev_ms": ms(summary.stdev) if summary and summary.stdev is not None else None,
        "median_ms": ms(summary.median) if summary else None,
        "p90_ms": ms(summary.p90) if summary else None,
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
    """The quality meter's columns of a row (speechperf.meters.quality.QualityScore, or None): its headline, WER /
    CER as fractions (as every document keeps them; shown in percent), BLEU / chrF in points (ASR-BLEU in ``bleu``
    for speech output)."""

    def rounded(v, digits):
        return None if v is None else round(v, digits)

    if quality is None:
        return {"quality": None, "wer": None, "cer": None, "bleu": None, "chrf": None, **speech_columns(None)}
    return {
        "quality": quality.headline(),
        "wer": rounded(quality.wer, 6),
        "cer": rounded(quality.cer, 6),
        "bleu": rounded(quality.bleu, 2),
        "chrf": rounded(quality.chrf, 2),
        **speech_columns(quality.speech),
    }


def speech_columns(speech) -> dict[str, Any]:
    """A SpeechQuality's figures, or Nones."""
    values = {name: None if speech is None else getattr(speech, name) for name in SPEECH_COLUMNS}
    return {name: None if v is None else round(v, 4) for name, v in values.items()}
