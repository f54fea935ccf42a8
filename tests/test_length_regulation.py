"""Length regulation (speechperf.adapters.length): log-durations to repeat counts, bounding, repeating."""

import numpy as np
import pytest

from speechperf.adapters.length import bound_durations, durations_from_log, regulate
from speechperf.errors import FeedError, SpeechperfError


def test_durations_invert_log1p_and_round():
    frames = np.array([[1, 2, 5, 17]])
    log_durations = np.log1p(frames + np.array([[0.3, -0.4, 0.49, -0.2]]))
    assert durations_from_log(log_durations).tolist() == [[1, 2, 5, 17]]


def test_durations_are_clamped_to_min_duration():
    # exp(-5) - 1 and exp(0) - 1 both round to 0 frames; every token still gets one.
    log_durations = np.array([[-5.0, 0.0, np.log(4.0)]])
    assert durations_from_log(log_durations).tolist() == [[1, 1, 3]]
    assert durations_from_log(log_durations, min_duration=0).tolist() == [[0, 0, 3]]


def test_scale_stretches_before_rounding():
    log_durations = np.log1p(np.array([[2.0, 3.0]]))
    assert durations_from_log(log_durations, scale=1.5).tolist() == [[3, 4]]  # 3.0, 4.5 -> round half to even


def test_huge_prediction_does_not_overflow_and_is_bounded():
    durations = durations_from_log(np.array([[1000.0, 1.0]]), max_total=50)
    assert durations.tolist() == [[50, 0]]


def test_padding_gets_no_frames():
    log_durations = np.log1p(np.full((2, 4), 3.0))
    durations = durations_from_log(log_durations, lengths=np.array([4, 2]))
    assert durations.tolist() == [[3, 3, 3, 3], [3, 3, 0, 0]]


def test_bound_takes_frames_from_the_end():
    durations = np.array([[3, 4, 5], [1, 1, 1]])
    assert bound_durations(durations, 8).tolist() == [[3, 4, 1], [1, 1, 1]]
    assert bound_durations(durations, 2).tolist() == [[2, 0, 0], [1, 1, 0]]


def test_regulate_repeats_each_step_exactly():
    values = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    durations = np.array([[2, 0, 1], [1, 3, 1]])
    out, frames = regulate(values, durations)
    assert frames.tolist() == [3, 5]
    assert out.shape == (2, 5, 2)
    assert out[0].tolist() == [[0, 1], [0, 1], [4, 5], [0, 0], [0, 0]]  # zero-padded after 3 frames
    assert out[1].tolist() == [[6, 7], [8, 9], [8, 9], [8, 9], [10, 11]]


def test_regulate_unit_ids_keeps_dtype_and_pad_value():
    units = np.array([[7, 9]], dtype=np.int64)
    out, frames = regulate(units, np.array([[2, 3]]), pad_value=0)
    assert out.dtype == np.int64
    assert out.tolist() == [[7, 7, 9, 9, 9]]
    assert frames.tolist() == [5]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: durations_from_log(np.zeros(3)), "log_durations has shape"),
        (lambda: durations_from_log(np.zeros((1, 3)), scale=0), "duration scale is 0"),
        (lambda: durations_from_log(np.zeros((2, 3)), lengths=np.array([3])), "lengths has shape"),
        (lambda: bound_durations(np.ones((1, 3), dtype=np.int64), 0), "max_total is 0"),
        (lambda: regulate(np.zeros((1, 3, 2)), np.ones((1, 4), dtype=np.int64)), "durations have shape"),
        (lambda: regulate(np.zeros((1, 2, 2)), np.array([[1, -1]])), "durations contain -1"),
        (lambda: regulate(np.zeros((1, 2, 2)), np.zeros((1, 2), dtype=np.int64)), "sum to 0 frames"),
    ],
)
def test_bad_input_is_one_clear_error(call, match):
    with pytest.raises((FeedError, SpeechperfError), match=match):
        call()
