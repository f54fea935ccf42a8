"""What a benchmark produces: per-stage figures and the totals aggregated as fairseq does.

Totals over stages: runtime and FLOPs are summed per sample (only samples that every stage measured), memory is
the max over stages (stages run one after another, so their peaks do not add up); the first-call-per-shape cost
compares the stages' summed first calls with their summed later calls, per sample.
"""

from __future__ import annotations

from typing import Any

import attrs

from speechperf.benchmark.batching import BatchFigures
from speechperf.benchmark.batching import combined as combined_batches
from speechperf.meters.first_call import ShapeCost, combined
from speechperf.meters.flops import FlopCount
from speechperf.meters.memory import MemoryResult
from speechperf.meters.quality import QualityResult
from speechperf.meters.roofs import Roofs
from speechperf.meters.rtf import RtfResult
from speechperf.meters.runtime import RuntimeResult, Stats
from speechperf.meters.samples import SampleFailure


@attrs.frozen
class StageResult:
    index: int  # 1-based, as stage1..stage3 in the config
    role: str
    label: str
    runtime: RuntimeResult | None
    memory: MemoryResult | None
    flops: FlopCount | None
    rtf: RtfResult | None
    failures: tuple[SampleFailure, ...]
    load_s: float
    first_call_s: float | None
    batching: BatchFigures | None = None  # its timed batches (batch_size 1: each sample its own)
    backend: str | None = None  # the backend the stage ran on (a pinned stage's own; None: the run's)
    padded_to_s: float | None = None  # every input padded to this length (Stage.padded_to_s)


@attrs.frozen
class Totals:
    """Cascade totals: runtime and FLOPs summed over stages per sample, memory max over stages."""

    runtime: Stats | None
    per_sample_s: dict[str, float]
    rtf: RtfResult | None
    peak_mib: float | None
    footprint_mib: float | None
    flops_per_sample: float | None
    flops_source: str | None
    first_call_per_shape: ShapeCost | None = None
    batching: BatchFigures | None = None  # each batch's seconds summed over the stages

    @property
    def samples_per_s(self) -> float | None:
        """Throughput: the samples every stage timed over their summed runtime."""
        total = sum(self.per_sample_s.values())
        return len(self.per_sample_s) / total if total > 0 else None


@attrs.frozen
class BenchResult:
    model_type: str
    backend: str
    device: str
    threads: int
    warmup: int
    repeat: int
    samples: tuple[str, ...]
    stages: tuple[StageResult, ...]
    totals: Totals
    failed: dict[str, str]  # sample id -> first failure message
    outputs: dict[str, dict[str, Any]]  # sample id -> what the last stage produced
    complete: bool = True  # False when the run was interrupted
    warmup_per_shape: bool = False
    quality: QualityResult | None = None  # scored after every measurement, untimed (speechperf.meters.quality)
    batch_size: int = 1  # general.batch_size as run (capped to the dataset's size)
    roofs: Roofs | None = None  # the machine's roofs at ``threads`` (speechperf.meters.roofs), for the roofline

    @property
    def hybrid(self) -> bool:
        """Whether some stage ran on another backend than the run's (``stageN.backend``)."""
        return any(s.backend not in (None, self.backend) for s in self.stages)

    def quality_of(self, stage: StageResult | None) -> object:
        """The quality score shown on a stage's row (None: the total row); the last stage shows the run's."""
        if self.quality is None:
            return None
        if stage is None or stage.index == len(self.stages):
            return self.quality.total
        return self.quality.of(f"stage{stage.index} {stage.role}")


def _per_sample_flops(flops: FlopCount | None) -> float | None:
    """Mean FLOPs per counted sample; None when no sample could be counted."""
    if flops is None or not flops.per_sample:
        return None
    return flops.total / len(flops.per_sample)


def totals(
    stages: tuple[StageResult, ...], samples: tuple[str, ...], audio_s: dict[str, float], audio_side: str | None
) -> Totals:
    per_sample: dict[str, float] = {}
    runtimes = [s.runtime for s in stages if s.runtime is not None]
    if stages and len(runtimes) == len(stages):
        timed = [r.per_sample_seconds for r in runtimes]
        for sid in samples:
            if all(sid in t for t in timed):
                per_sample[sid] = sum(t[sid] for t in timed)
    rtf = None
    if per_sample and audio_side and all(audio_s.get(k, 0) > 0 for k in per_sample):
        from speechperf.meters.rtf import real_time_factor

        rtf = real_time_factor(per_sample, audio_s, audio=audio_side)
    peaks = [s.memory.peak_mib for s in stages if s.memory is not None and s.memory.peak_mib is not None]
    footprints = [s.memory.footprint_mib for s in stages if s.memory is not None and s.memory.footprint_mib is not None]
    flops = [_per_sample_flops(s.flops) for s in stages]
    counted = [f for f in flops if f is not None]
    sources = {s.flops.source for s in stages if s.flops is not None}
    return Totals(
        runtime=Stats.of(list(per_sample.values())),
        per_sample_s=per_sample,
        rtf=rtf,
        peak_mib=max(peaks) if peaks else None,
        footprint_mib=max(footprints) if footprints else None,
        flops_per_sample=sum(counted) if flops and len(counted) == len(flops) else None,
        flops_source="+".join(sorted(sources)) if sources else None,
        first_call_per_shape=_first_call_per_shape(stages),
        batching=combined_batches([s.batching for s in stages]),
    )


def _first_call_per_shape(stages: tuple[StageResult, ...]) -> ShapeCost | None:
    runtimes = [s.runtime for s in stages if s.runtime is not None]
    if not stages or len(runtimes) != len(stages):
        return None
    costs = [r.first_call_per_shape for r in runtimes]
    if len(stages) == 1:
        return costs[0]
    per_stage = [{t.sample_id: t.first_call for t in r.samples if t.first_call} for r in runtimes]
    return combined(per_stage, [c.source for c in costs if c is not None])
