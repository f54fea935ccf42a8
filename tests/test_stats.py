"""The comparison statistics against numbers computed by hand (and by scipy's reference t-test formula)."""

import math

import pytest

from speechperf import stats


def test_speed_ratio_is_ratio_of_means_with_propagated_sigma():
    fast = [1.0, 2.0, 3.0]  # mean 2, stdev 1
    slow = [4.0, 6.0, 8.0]  # mean 6, stdev 2
    r = stats.speed_ratio(fast, slow)
    assert r.value == pytest.approx(3.0)
    # 3 * sqrt((1/2)^2 + (2/6)^2) = 3 * sqrt(0.25 + 0.111...) = 1.80277...
    assert r.sigma == pytest.approx(3 * math.sqrt(0.25 + 1 / 9))


def test_speed_ratio_has_no_sigma_from_a_single_run():
    r = stats.speed_ratio([2.0], [5.0, 5.0])
    assert r.value == pytest.approx(2.5) and r.sigma is None


def test_welch_p_value_matches_the_hand_computed_t_test():
    a = [1.0, 2.0, 3.0, 4.0]  # mean 2.5, var 5/3
    b = [2.0, 4.0, 6.0, 8.0, 10.0]  # mean 6, var 10
    va, vb, na, nb = 5 / 3, 10.0, 4, 5
    t = (2.5 - 6) / math.sqrt(va / na + vb / nb)
    dof = (va / na + vb / nb) ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    from scipy.stats import t as student_t

    expected = 2 * student_t.sf(abs(t), dof)
    assert stats.welch_p_value(a, b) == pytest.approx(expected, rel=1e-9)
    assert 0.01 < expected < 0.1  # a sanity anchor on the hand computation itself


def test_not_significant_is_said():
    c = stats.compare("a", [1.0, 1.2, 0.9, 1.1], "b", [1.05, 1.15, 0.95, 1.1])
    assert c.significant is False
    assert "not significant" in c.sentence()


def test_rank_puts_the_fastest_first_and_says_how_much_faster():
    ranked = stats.rank({"torch": [2.0, 2.1, 1.9], "onnxruntime": [1.0, 1.05, 0.95], "paddle": [3.0, 3.1, 2.9]})
    assert [c.slow for c in ranked] == ["torch", "paddle"]
    assert all(c.fast == "onnxruntime" for c in ranked)
    # 2 * sqrt((0.05/1)^2 + (0.1/2)^2) = 0.14
    assert ranked[0].sentence().startswith("onnxruntime ran 2.00 ± 0.14 times faster than torch")


def test_outliers_by_modified_z_score():
    values = [10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 30.0]
    assert stats.outliers(values) == [6]
    assert "1 of 7" in stats.outlier_warning(values, "torch runs")
    assert stats.outlier_warning([1.0, 1.0, 1.0], "x") is None


def test_outliers_can_require_a_minimum_distance_from_the_median():
    steady = [1.000, 1.001, 0.999, 1.000, 1.002, 0.998, 1.07]  # MAD 0.001: 1.07 scores 47, but is 7% off
    assert stats.outliers(steady) == [6]
    assert stats.outliers(steady, min_relative=0.10) == []
    assert stats.outliers([*steady[:-1], 1.5], min_relative=0.10) == [6]
    warning = stats.outlier_warning([*steady[:-1], 1.5], "torch", min_relative=0.10)
    assert warning.startswith(
        "torch: 1 of 7 values are outliers (modified z-score > 3.5 and more than 10% from the median)"
    )


def test_sigma_is_undefined_below_two_values_everywhere():
    # One rule for bench (Stats.of), compare and optimize: σ of one value is None, never 0.0.
    assert stats.stdev([4.0]) is None and stats.stdev([]) is None
    assert stats.stdev([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1.2909944487)  # sqrt(5/3)
    one = stats.Stats.of([0.25])
    assert one.stdev is None and one.mean == 0.25 and one.p90 == 0.25
    assert stats.mean([]) is None and stats.mean([1.0, 2.0]) == 1.5


def test_mean_sigma_is_written_one_way():
    assert stats.mean_sigma(12.3456, 0.5649, "ms") == "12.35 ms ± 0.56 ms"
    assert stats.mean_sigma(12.3456, 0.5649) == "12.35 ± 0.56"
    assert stats.mean_sigma(12.3456, None) == "12.35"  # one run: the mean alone, no "± 0.00"
    assert stats.mean_sigma(None, None) == "-"


def test_ratio_sentence_and_table_round_the_same_value_the_same_way():
    # fast [1, 2, 3] (mean 2, s 1), slow [2, 4, 6] (mean 4, s 2): ratio 2, sigma 2 * sqrt(0.5**2 + 0.5**2).
    ratio = stats.speed_ratio([1.0, 2.0, 3.0], [2.0, 4.0, 6.0])
    assert ratio.value == pytest.approx(2.0) and ratio.sigma == pytest.approx(1.4142135624)
    assert ratio.text() == "2.00 ± 1.41"
    # 1.6949 rounds to 1.69 at 2 decimals, but to 1.695 -> "1.70" when rounded to 3 first (the old table's way).
    near = stats.Comparison("a", "b", stats.Ratio(1.6949, 0.2849), 0.01)
    assert near.sentence() == "a ran 1.69 ± 0.28 times faster than b (p = 0.01)"
    assert near.ratio.text() == "1.69 ± 0.28"
