"""What ``speechperf tune`` records: every candidate and pipeline as rows of its result document (shown by
speechperf.views.tune), the answer's lines, and the figures the rows need (a pipeline's model size, a backend's own
pipeline)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speechperf.tune.combine import Pipeline, record
from speechperf.tune.screen import Screened, Screening
from speechperf.tune.space import FP32, LOAD_KEYS, StageCandidate

log = logging.getLogger(__name__)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


def screened_row(row: Screened) -> dict[str, Any]:
    c = row.candidate
    times = row.times
    return {
        "phase": "stage",
        "candidate": c.key,
        "stage": f"stage{c.stage}",
        "backend": c.backend,
        "variant": c.variant,
        "precision": c.precision,
        "threads": c.threads,
        "rung": row.rung or None,
        "mean_ms": _ms(sum(times) / len(times)) if times else None,
        "stdev_ms": _ms(stats_stdev(times)),
        "peak_rss_mib": row.peak_mib,
        "size_mb": None if row.size_bytes is None else round(row.size_bytes / 1e6, 3),
        "parity": row.parity,
        "status": row.status,
    }


def stats_stdev(values: Sequence[float]) -> float | None:
    import statistics

    return statistics.stdev(values) if len(values) > 1 else None


def pipeline_row(p: Pipeline) -> dict[str, Any]:
    rec = record(p)
    return {
        "phase": "end to end",
        "candidate": p.name,
        "backend": p.stages[0].backend if p.stages else None,
        "precision": ", ".join(dict.fromkeys(c.precision for c in p.stages)) if p.stages else FP32,
        "threads": p.threads if p.stages else None,
        "mean_ms": rec["mean_ms"],
        "stdev_ms": rec["stdev_ms"],
        "samples_per_s": p.samples_per_s,
        "peak_rss_mib": p.peak_mib,
        "size_mb": rec["size_mb"],
        "quality": p.quality,
        "metric": p.metric,  # the quality's figure, for the Pareto plot: "WER" in %, "BLEU" in points
        "value": p.value,
        "front": p.front if p.stages else None,
        "status": p.status if p.stages else "reference",
        # what the quality verdict was drawn from: the WER / BLEU loss with its bootstrap interval, per utterance
        "quality_deltas": rec["quality_deltas"],
        "utterance_errors": rec["utterance_errors"],
    }


def rows(
    screening: Screening | None, reference: Pipeline | None, pipelines: Sequence[Pipeline], objective: str
) -> list[dict[str, Any]]:
    """Every candidate tried or dropped, stage by stage, then the reference and every pipeline run whole."""
    out: list[dict[str, Any]] = []
    if screening is not None:
        out += [screened_row(r) for r in screening.rows.values()]
        out += [
            {"phase": "stage", "candidate": d.key, "stage": f"stage{d.stage}", "backend": d.backend,
             "precision": d.precision, "status": f"dropped: {d.reason}"}
            for d in screening.dropped
        ]  # fmt: skip
    if reference is not None and reference.runs:
        out.append(pipeline_row(reference))
    out += [pipeline_row(p) for p in pipelines]
    return out


def single_framework(screening: Screening, backend: str, stages: int) -> list[StageCandidate] | None:
    """``backend``'s own pipeline at its best: per stage, its fastest fp32 candidate that finished and passed
    parity (at the highest rung it reached); None when a stage has none."""
    chosen = []
    for stage in range(1, stages + 1):
        rows = [
            r
            for r in screening.rows.values()
            if r.candidate.stage == stage
            and r.candidate.backend == backend
            and r.candidate.precision == FP32
            and r.mean is not None
            and not r.status.startswith(("dropped", "failed"))
        ]
        if not rows:
            return None
        chosen.append(min(rows, key=lambda r: (-r.rung, r.mean)).candidate)
    return chosen


def pipeline_size(cfg, p: Pipeline) -> int | None:
    """Bytes of the files the pipeline's stages load; None where a stage's files cannot be told."""
    total = 0
    for c in p.stages:
        size = stage_size(cfg, c)
        if size is None:
            return None
        total += size
    return total


def stage_size(cfg, c: StageCandidate) -> int | None:
    import json

    keys = {}
    for item in c.sets:
        target, _, raw = item.partition("=")
        key = target.partition(".")[2]
        if key in LOAD_KEYS:
            keys[key] = json.loads(raw) if raw.startswith('"') else raw
    source = keys.get("model_dir") or keys.get("path")
    if source:  # int8 files
        path = Path(source)
        files = [f for f in path.rglob("*") if f.is_file() and f.suffix != ".json"] if path.is_dir() else [path]
        return sum(f.stat().st_size for f in files) if files else None
    try:
        import attrs

        from speechperf.optimize.variants import plan_stage

        stage = cfg.stages[c.stage - 1]
        if "format" in keys:
            stage = attrs.evolve(stage, format=keys["format"])
        plan = plan_stage(c.stage, stage, cfg.roles[c.stage - 1], c.backend)
        return sum(f.stat().st_size for f in plan.fp32_files)
    except Exception as exc:  # a format whose files were never built here: the size is left out, not guessed
        log.debug("tune: size of %s unknown: %s", c.key, exc)
        return None
