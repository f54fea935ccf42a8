"""The first-call-per-shape rule (``speechperf.meters.first_call``) on synthetic timings, the meter's shape
tracking and per-shape warm-up, and how bench totals and compare combine the figure. The same rule on the real
paddle predictor is tested in tests/test_first_call_paddle.py."""

from __future__ import annotations

import statistics

import pytest

from speechperf.benchmark.results import StageResult, totals
from speechperf.meters import first_call
from speechperf.meters.first_call import FirstCall, ShapeCost, shape_cost, shape_key
from speechperf.meters.runtime import RuntimeMeter, RuntimeResult, SampleTiming

# The raw repeats of issue 20 (ms): `speechperf bench --backend paddle` on a quiet machine; gen0 had the warm-up.
ISSUE_20 = {"gen0": (92.8, 93.9, 96.4), "gen1": (113.8, 67.2, 84.7), "gen2": (149.3, 107.7, 101.9)}
ISSUE_20["gen3"] = (151.5, 104.2, 105.2)


def result_of(repeats: dict[str, tuple[float, ...]], warmed=("gen0",), warmups=None) -> RuntimeResult:
    """A RuntimeResult of these repeats (ms); ``warmed``: samples whose shape the warm-up had run."""
    warmups = warmups or {}
    samples = tuple(
        SampleTiming(
            sid,
            tuple(int(ms * 1e6) for ms in ns),
            tuple(int(ms * 1e6) for ms in warmups.get(sid, ())),
            new_shape=sid not in warmed,
        )
        for sid, ns in repeats.items()
    )
    return RuntimeResult(samples, (), 0, len(next(iter(repeats.values()))))


def test_the_issue_repeats_are_a_shape_cost_not_noise():
    result = result_of(ISSUE_20)
    cost = result.first_call_per_shape
    # first / median(later) - 1: gen1 113.8/75.95, gen2 149.3/104.8, gen3 151.5/104.7
    assert cost.excess == pytest.approx(151.5 / 104.7 - 1)
    assert cost.detected and (cost.showing, cost.considered) == (3, 3) and cost.source == first_call.FROM_REPEATS
    assert (
        "the first call on a new input shape costs +44.7% (median over 3 samples, 3 of 3 show it" in result.shape_note
    )
    # Every repeat counted, the spread is over 20% (the noise note the issue saw); without the first repeats, small.
    assert statistics.median(s.spread for s in result.samples) > 0.2
    assert result.noise < 0.05 and result.noise_warning is None


def test_noise_without_a_pattern_is_still_noise():
    # The first repeat is the slowest in one sample only: no majority, so the noise note stays, counting every repeat.
    repeats = {
        "a": (90.0, 90.0, 91.0),
        "b": (150.0, 100.0, 102.0),
        "c": (70.0, 110.0, 100.0),
        "d": (100.0, 60.0, 130.0),
    }
    result = result_of(repeats, warmed=("a",))
    assert result.first_call_per_shape.detected is False and result.shape_note is None
    assert "runtime is noisy" in result.noise_warning and "first repeats left out" not in result.noise_warning


def test_a_slow_first_repeat_within_the_later_repeats_spread_is_not_called():
    # Every first repeat is 30% slower, but the later repeats themselves differ by about as much.
    repeats = {"a": (130.0, 70.0, 130.0), "b": (130.0, 130.0, 70.0), "c": (260.0, 140.0, 260.0)}
    cost = result_of(repeats, warmed=()).first_call_per_shape
    assert cost.showing == 0 and cost.detected is False and cost.later_spread > 0.3


def test_a_small_excess_is_not_called_even_on_steady_timings():
    repeats = {"a": (105.0, 100.0, 100.1), "b": (106.0, 100.0, 100.2), "c": (104.0, 100.0, 99.9)}
    cost = result_of(repeats, warmed=()).first_call_per_shape
    assert cost.excess == pytest.approx(0.05, abs=0.011) and cost.detected is False


def test_one_considered_sample_or_too_few_repeats_call_nothing():
    assert result_of({"gen0": (1.0, 1.0, 1.0), "gen1": (2.0, 1.0, 1.0)}).first_call_per_shape.detected is False
    two_repeats = result_of({"gen0": (1.0, 1.0), "gen1": (2.0, 1.0), "gen2": (2.0, 1.0)})
    assert two_repeats.first_call_per_shape is None and "cannot be estimated" in two_repeats.noise_warning
    # a majority is two thirds: 2 of 4 is not enough, 3 of 4 is
    steady = (1.0, 1.0, 1.0)
    half = [FirstCall(2, (1, 1)), FirstCall(2, (1, 1)), FirstCall(1, (1, 1)), FirstCall(1, (1, 1))]
    assert shape_cost(half, first_call.FROM_REPEATS).detected is False
    assert result_of({"a": (2.0, 1.0, 1.0), "b": (2.0, 1.0, 1.0), "c": (2.0, 1.0, 1.0), "d": steady}, ()).shape_note


def test_per_shape_warm_up_moves_the_cost_out_of_the_repeats():
    repeats = {"gen0": (100.0, 101.0, 100.0), "gen1": (80.0, 81.0, 80.0), "gen2": (120.0, 119.0, 121.0)}
    result = result_of(repeats, warmups={"gen1": (130.0,), "gen2": (190.0,)})
    cost = result.first_call_per_shape
    assert cost.source == first_call.FROM_WARMUP and cost.detected
    assert cost.excess == pytest.approx(((130 / 80 - 1) + (190 / 120 - 1)) / 2)
    assert "warmed before timing" in result.shape_note and result.noise_warning is None


def test_the_meter_warms_each_new_shape_and_marks_it():
    calls = []
    meter = RuntimeMeter(warmup=0, repeat=2, shape_warmup=2, seen_shapes={"s0"})
    for sid, shape in (("a", "s0"), ("b", "s1"), ("c", "s1"), ("d", "s2"), ("e", None)):
        meter.measure(sid, lambda sid=sid: calls.append(sid), shape=shape)
    assert calls == ["a"] * 2 + ["b"] * 4 + ["c"] * 2 + ["d"] * 4 + ["e"] * 2
    samples = meter.result().samples
    assert [len(s.warmup_ns) for s in samples] == [0, 2, 0, 2, 0]
    assert [s.new_shape for s in samples] == [False, True, False, True, False]
    # without shape warm-up the new shapes are still marked, and their first repeat is their first call
    plain = RuntimeMeter(warmup=0, repeat=3)
    plain.measure("a", lambda: None, shape="x")
    assert (
        plain.result().samples[0].new_shape
        and plain.result().samples[0].first_call.later_ns == plain.result().samples[0].ns[1:]
    )


def test_shape_key_sees_shapes_not_values():
    import numpy as np

    a = {"features": np.zeros((120, 80), np.float32), "sample_rate": 16000, "text": "hello"}
    same = {"features": np.ones((120, 80), np.float32), "sample_rate": 16000, "text": "world"}
    assert shape_key(a) == shape_key(same)
    assert shape_key(a) != shape_key({**a, "features": np.zeros((121, 80), np.float32)})
    assert shape_key(a) != shape_key({**a, "features": np.zeros((120, 80), np.float64)})


def _stage(index: int, result: RuntimeResult) -> StageResult:
    return StageResult(index, "s2t", f"s{index}", result, None, None, None, (), 0.0, None)


def test_a_cascade_total_sums_its_stages_first_and_later_calls_per_sample():
    one = result_of({"gen0": (1.0, 1.0, 1.0), "gen1": (3.0, 1.0, 1.0), "gen2": (3.0, 1.0, 1.0)})
    two = result_of({"gen0": (9.0, 9.0, 9.0), "gen1": (9.0, 9.0, 9.0), "gen2": (9.0, 9.0, 9.0)})
    total = totals((_stage(1, one), _stage(2, two)), ("gen0", "gen1", "gen2"), {}, None).first_call_per_shape
    assert total.excess == pytest.approx(12 / 10 - 1) and total.considered == 2 and total.detected
    # one stage: the stage's own figure
    alone = totals((_stage(1, one),), ("gen0", "gen1", "gen2"), {}, None).first_call_per_shape
    assert alone == one.first_call_per_shape


def test_runs_combine_as_the_median_called_by_a_majority():
    def run(excess, detected):
        return ShapeCost(excess, detected, 3 if detected else 0, 3, first_call.FROM_REPEATS, 0.02)

    combined = first_call.over_runs([run(0.4, True), run(0.5, True), run(0.05, False)])
    assert combined.excess == 0.4 and combined.detected and (combined.showing, combined.considered) == (6, 9)
    assert first_call.over_runs([run(0.4, True), run(0.05, False)]).detected is False
    assert first_call.columns(combined) == {"first_call_new_shape_extra": 0.4, "first_call_new_shape_detected": True}
    from speechperf.views.cells import first_call_cell  # the console's cell of those columns

    assert first_call_cell(first_call.columns(combined)) == "+40.0%"
    assert first_call_cell(first_call.columns(run(0.05, False))) == "+5.0% (noise)"
    assert first_call_cell(first_call.columns(None)) == "-"
