"""Batching (``general.batch_size``): samples grouped by length, as fairseq batches by size, and each batch's
timing shared out among its samples.

- ``group_by_length``: the sample ids sorted by the first stage's input length (a stable sort, so equal lengths
  keep dataset order) and cut into consecutive groups of ``batch_size``; the last group holds the rest. Every stage
  runs the same groups (less the samples that failed before it), so a cascade's batch latency adds up per group.
- A batch is timed as one forward (``speechperf.meters.runtime``, keyed ``batchN``); each of its samples gets the
  batch's time divided by the batch's size (``amortized``). So the per-sample figures, the totals, RTF and
  compare's ranking measure throughput, and the batch's own time is the latency per batch (``BatchFigures``).
- Padding never changes an output: each stage's ``run_batch`` pads with the lengths its graphs mask by, or the
  stage refuses batch_size > 1 (``Stage.batch_refusal``); docs/benchmark.md, "Batching".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from speechperf.meters.runtime import RuntimeResult, SampleTiming
from speechperf.meters.samples import SampleFailure
from speechperf.stats import Stats


@attrs.frozen
class BatchTiming:
    key: str  # batchN: its place among the groups of the first stage
    sample_ids: tuple[str, ...]
    seconds: float  # the median of its timed repeats


@attrs.frozen
class BatchFigures:
    """A stage's (or a cascade's) timed batches: latency per batch and throughput."""

    batch_size: int  # the size asked for (the last batch may hold fewer)
    batches: tuple[BatchTiming, ...]

    @property
    def latency(self) -> Stats | None:
        """Statistics over the batches' seconds; None when no batch was timed."""
        return Stats.of([b.seconds for b in self.batches])

    @property
    def samples_per_s(self) -> float | None:
        total = sum(b.seconds for b in self.batches)
        return sum(len(b.sample_ids) for b in self.batches) / total if total > 0 else None


def group_by_length(lengths: Mapping[str, int], batch_size: int) -> dict[str, tuple[str, ...]]:
    """``batchN`` -> its sample ids: ``lengths`` (sample id -> length, in dataset order) sorted by length and cut
    into groups of ``batch_size``."""
    order = sorted(lengths, key=lambda sid: lengths[sid])
    return {f"batch{n + 1}": tuple(order[i : i + batch_size]) for n, i in enumerate(range(0, len(order), batch_size))}


def amortized(result: RuntimeResult, members: Mapping[str, Sequence[str]]) -> RuntimeResult:
    """Per-sample timings from per-batch ones: each sample of a batch gets the batch's nanoseconds over its size;
    a failed batch fails each of its samples."""
    samples = []
    for timing in result.samples:
        ids = members[timing.sample_id]
        share = len(ids)
        for sid in ids:
            samples.append(
                SampleTiming(
                    sid,
                    tuple(v // share for v in timing.ns),
                    tuple(v // share for v in timing.warmup_ns),
                    timing.new_shape,
                )
            )
    return attrs.evolve(result, samples=tuple(samples), failures=expand_failures(result.failures, members))


def expand_failures(failures: Sequence[SampleFailure], members: Mapping[str, Sequence[str]]) -> tuple:
    """A batch's failure as one failure per sample of the batch."""
    return tuple(attrs.evolve(f, sample_id=sid) for f in failures for sid in members.get(f.sample_id, (f.sample_id,)))


def figures(result: RuntimeResult, members: Mapping[str, Sequence[str]], batch_size: int) -> BatchFigures:
    return BatchFigures(
        batch_size, tuple(BatchTiming(t.sample_id, tuple(members[t.sample_id]), t.seconds) for t in result.samples)
    )


def combined(per_stage: Sequence[BatchFigures | None]) -> BatchFigures | None:
    """A cascade's batches: each group's seconds summed over the stages, for the groups every stage timed."""
    if not per_stage or any(f is None for f in per_stage):
        return None
    stages = [{b.key: b for b in f.batches} for f in per_stage if f is not None]
    keys = [k for k in stages[0] if all(k in s for s in stages)]
    batches = tuple(BatchTiming(k, stages[-1][k].sample_ids, sum(s[k].seconds for s in stages)) for k in keys)
    return BatchFigures(per_stage[0].batch_size, batches)  # type: ignore[union-attr]
