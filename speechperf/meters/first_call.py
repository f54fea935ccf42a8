"""The first call on a new input shape: the cost a runtime pays the first time a session sees an input shape.

Why it is a figure of its own: paddle's inference predictor does work again for each new input shape (its first
call on a new length of the S2T encoder takes 3 to 5 times its later ones: tests/perf/first_call_per_shape.py).
fairseq's design warms up on the first sample only, so with several timed repeats per sample every later sample's
first repeat is slower than its other repeats. That is systematic, not noise: a service fed speech of varying
lengths pays it, and "close other busy programs" does not remove it. Measured figures: docs/benchmark.md.

The rule, per stage and over samples (``shape_cost``). A sample is *considered* when its first call met an input
shape the session had not run before (not the warm-up's sample, not an earlier sample of the same shape) and it has
a first call and at least two later calls:

- first call: its first timed repeat, or its own first warm-up call when it was warmed (``general.warmup_per_shape``);
- later calls: its other repeats (all of its repeats when it was warmed);
- excess = first / median(later) - 1; spread = coefficient of variation (stdev / mean) of the later calls;
- the sample *shows* the pattern when excess > max(``MIN_EXCESS``, ``SPREAD_FACTOR`` * spread);
- the pattern is *called* when at least ``MIN_SAMPLES`` samples are considered, at least ``MAJORITY`` of them show
  it, and the median excess > max(``MIN_EXCESS``, ``SPREAD_FACTOR`` * the median spread).

The figure is the median excess over the considered samples, called or not. A clear majority keeps one unlucky
repeat (another process waking up) from calling it; measuring the excess against the later calls' own spread keeps
a noisy run from calling it. Once called from the repeats, the noise estimate of ``RuntimeResult`` leaves those
first repeats out (they are this cost, not noise).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

MIN_EXCESS = 0.10  # the noise threshold: a first call 10% slower than the later ones is within what noise does
SPREAD_FACTOR = 2.0
MAJORITY = 2 / 3
MIN_SAMPLES = 2
FROM_REPEATS = "first repeats"
FROM_WARMUP = "per-shape warm-up"


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """stdev (n-1) / mean; None with fewer than 2 values."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else 0.0


@attrs.frozen
class FirstCall:
    """One sample's first call on a new input shape and its later calls on that shape, in ns."""

    first_ns: int
    later_ns: tuple[int, ...]

    @property
    def excess(self) -> float:
        later = statistics.median(self.later_ns)
        return self.first_ns / later - 1 if later > 0 else 0.0

    @property
    def spread(self) -> float:
        return coefficient_of_variation(self.later_ns) or 0.0

    @property
    def shows(self) -> bool:
        return self.excess > max(MIN_EXCESS, SPREAD_FACTOR * self.spread)


@attrs.frozen
class ShapeCost:
    """What the first call on a new input shape costs over the later calls, as a fraction (0.44: +44%)."""

    excess: float  # median over the considered samples
    detected: bool  # the rule above called the pattern
    showing: int  # considered samples that show it
    considered: int
    source: str  # FROM_REPEATS, FROM_WARMUP, or both joined with "+" (a cascade whose stages differ)
    later_spread: float  # median over the considered samples of the later calls' coefficient of variation

    def describe(self) -> str:
        """``the first call on a new input shape costs +44.2% (median over 3 samples, 3 of 3 show it, ...)``."""
        how = (
            "its own warm-up call against its timed repeats"
            if self.source == FROM_WARMUP
            else "each sample's first timed call against its later ones"
        )
        verdict = "costs" if self.detected else "shows no clear cost:"
        return (
            f"the first call on a new input shape {verdict} {percent(self.excess)} (median over {self.considered} "
            f"samples, {self.showing} of {self.considered} show it; later calls vary by {self.later_spread:.0%}; "
            f"{how})"
        )


def percent(excess: float) -> str:
    """``+44.2%``: the ``first_call_new_shape_extra`` column's value, so the note and the table say the same."""
    return f"{round(excess, 3):+.1%}"


def shape_cost(calls: Sequence[FirstCall], source: str) -> ShapeCost | None:
    """The rule of the module docstring; None when no sample can be considered."""
    calls = [c for c in calls if len(c.later_ns) >= 2]
    if not calls:
        return None
    excess = statistics.median(c.excess for c in calls)
    spread = statistics.median(c.spread for c in calls)
    showing = sum(c.shows for c in calls)
    detected = (
        len(calls) >= MIN_SAMPLES
        and showing >= MAJORITY * len(calls)
        and excess > max(MIN_EXCESS, SPREAD_FACTOR * spread)
    )
    return ShapeCost(excess, detected, showing, len(calls), source, spread)


def combined(per_stage: Sequence[Mapping[str, FirstCall]], sources: Sequence[str]) -> ShapeCost | None:
    """A cascade's cost: per sample considered in every stage, the stages' first calls summed against the sums of
    their later calls, repeat by repeat (the cascade's own first and later calls)."""
    if not per_stage:
        return None
    common = set(per_stage[0]).intersection(*per_stage[1:])
    calls = []
    for sid in sorted(common):
        parts = [stage[sid] for stage in per_stage]
        later = tuple(sum(repeat) for repeat in zip(*(p.later_ns for p in parts)))  # repeat by repeat
        calls.append(FirstCall(sum(p.first_ns for p in parts), later))
    return shape_cost(calls, "+".join(sorted(set(sources))))


def over_runs(costs: Sequence[ShapeCost]) -> ShapeCost | None:
    """Several runs' costs as one: the median excess and spread over the runs, called when most runs called it."""
    if not costs:
        return None
    return ShapeCost(
        statistics.median(c.excess for c in costs),
        sum(c.detected for c in costs) > len(costs) / 2,
        sum(c.showing for c in costs),
        sum(c.considered for c in costs),
        "+".join(sorted({c.source for c in costs})),
        statistics.median(c.later_spread for c in costs),
    )


def columns(cost: ShapeCost | None) -> dict[str, Any]:
    """The first call on a new input shape against the later calls (``speechperf.meters.first_call``), a fraction
    (0.442: 44.2% more), and whether the rule called it; bench and compare both show them."""
    return {
        "first_call_new_shape_extra": None if cost is None else round(cost.excess, 3),
        "first_call_new_shape_detected": None if cost is None else cost.detected,
    }


def shape_key(inp: Mapping[str, Any]) -> tuple:
    """What a stage input looks like to a session: its arrays' shapes and dtypes, the lengths of its strings and
    lists, its plain numbers. Two inputs with the same key feed a stage's first session call the same shapes (a
    decoding loop's later calls also depend on what it decodes, which the input's shape stands in for)."""
    key: list[tuple[Any, ...]] = []
    for name in sorted(inp):
        value = inp[name]
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            key.append((name, tuple(value.shape), str(value.dtype)))
        elif isinstance(value, (str, bytes, list, tuple)):
            key.append((name, len(value)))
        elif isinstance(value, (int, float, bool)) or value is None:
            key.append((name, value))
        else:
            key.append((name, type(value).__name__))
    return tuple(key)
