"""Every row of docs/profiler.md's "Differences from PaddleSpeech" table that is about reading the option string:
the drop-ins (s2t and t2s) read it as PaddleSpeech does, with one warning line per thing ignored or defaulted, and
strict parsing refuses the same strings. Framework-free."""

from __future__ import annotations

import logging

import pytest

from speechperf.adapters import paddlespeech as s2t
from speechperf.adapters import paddlespeech_t2s as t2s
from speechperf.profiler import ProfilerOptionError, ProfilerOptions


def lenient(text, module=s2t):
    return module.ProfilerOptions(text)


def warning_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "speechperf.profiler" and r.levelno == logging.WARNING]


def test_empty_string_is_the_defaults(caplog):
    o = lenient("")
    # PaddleSpeech's defaults (tests/test_profiler_options.py checks each), and s2t profiles with the legacy API
    assert o == ProfilerOptions(api="legacy", timer_window="paddle_timer") and o.timer_only is False
    t = lenient("=5", t2s)  # PaddleSpeech's t2s stops on "" (the empty item has no '='); an empty key it ignores
    assert (t.timer_only, t.api, t.profile_path, t.batch_range) == (True, "new", "profiler_log/", (10, 20))
    with pytest.raises(ValueError, match="not enough values to unpack"):
        lenient("", t2s)
    assert ProfilerOptions.parse("") == ProfilerOptions()
    assert warning_lines(caplog) == ["profiler option '=5' has no key; it was ignored, as in PaddleSpeech"]


@pytest.mark.parametrize(
    "text,kept,message",
    [
        (
            "batch_range=[20,10]",
            (10, 20),
            "batch_range='[20,10]' does not end after it starts; ignored, [10, 20] is used",
        ),
        ("batch_range=[-1,5]", (10, 20), "batch_range='[-1,5]' starts below 0; ignored, [10, 20] is used"),
        ("batch_range=[5]", (10, 20), "batch_range='[5]' has 1 value; ignored, [10, 20] is used"),
        ("batch_range=[10,20,30]", (10, 20), "batch_range='[10,20,30]': 30 ignored, [10, 20] is used"),
        # PaddleSpeech removes every space before it reads a value
        ("batch_range=[3, 7, 9]", (3, 7), "batch_range='[3,7,9]': 9 ignored, [3, 7] is used"),
    ],
)
def test_batch_range_paddlespeech_ignores(caplog, text, kept, message):
    assert lenient(text).batch_range == kept
    assert [line for line in warning_lines(caplog)] == [f"{message}, as in PaddleSpeech"]
    with pytest.raises(ProfilerOptionError):
        ProfilerOptions.parse(text)


@pytest.mark.parametrize("text", ["batch_range=[a,20]", "batch_range=[1.5,20]"])
def test_batch_range_paddlespeech_cannot_read_is_a_value_error(text):
    with pytest.raises(ValueError, match="is not integers"):
        lenient(text)
    with pytest.raises(ProfilerOptionError):
        ProfilerOptions.parse(text)


def test_unknown_key_is_ignored_with_a_warning(caplog):
    o = lenient("batch_range=[1,3]; sorted_ky=calls; foo=1")
    assert o.batch_range == (1, 3) and o.sorted_key == "total"
    assert warning_lines(caplog) == [
        "profiler option sorted_ky='calls' is unknown (did you mean 'sorted_key'?); it was ignored, as in PaddleSpeech",
        "profiler option foo='1' is unknown; it was ignored, as in PaddleSpeech",
    ]
    with pytest.raises(ProfilerOptionError, match="unknown profiler option 'sorted_ky'"):
        ProfilerOptions.parse("sorted_ky=calls")


def test_repeated_key_last_wins_with_a_warning(caplog):
    assert lenient("state=CPU; state=All").state == "All"
    assert warning_lines(caplog) == [
        "profiler option 'state' is given twice; the last value, 'All', is used, as in PaddleSpeech"
    ]
    with pytest.raises(ProfilerOptionError, match="given twice"):
        ProfilerOptions.parse("state=CPU; state=All")


@pytest.mark.parametrize("key", ["exit_on_finished", "timer_only"])
def test_a_word_that_is_not_true_is_false(caplog, key):
    assert getattr(lenient(f"{key}=maybe"), key) is False
    # s2t has no timer_only key: the drop-in honours it and says PaddleSpeech's s2t never uses it (not "as in
    # PaddleSpeech", which would be false: PaddleSpeech's s2t reads no timer_only at all)
    expected = [f"{key}='maybe' is not one of yes/true/t/1 or no/false/f/0; read as false, as in PaddleSpeech"]
    # timer_only read as false: operators are profiled, as PaddleSpeech's s2t always does; nothing differs to say
    assert warning_lines(caplog) == (expected if key == "exit_on_finished" else [])
    assert lenient("timer_only=yes").timer_only is True
    assert warning_lines(caplog)[-1:] == [
        "timer_only: PaddleSpeech's s2t profiler never uses it; honoured here, read as timer_only=true"
    ]
    with pytest.raises(ProfilerOptionError, match="is not a boolean"):
        ProfilerOptions.parse(f"{key}=maybe")


@pytest.mark.parametrize("word", ["true", "True", "yes", "1"])
def test_t2s_timer_only_true_words(word):
    # PaddleSpeech's t2s reads only the exact word True as true; here every true word is true
    assert lenient(f"timer_only={word}", t2s).timer_only is True
    assert lenient("timer_only=False", t2s).timer_only is False


@pytest.mark.parametrize(
    "text,message",
    [
        ("state=cpu", "state='cpu' is not allowed (did you mean 'CPU'?)"),
        (
            "sorted_key=avg",
            "sorted_key='avg' is not allowed (did you mean 'ave'?); allowed: calls, total, max, min, ave",
        ),
        ("batch_range", "profiler option 'batch_range' is not key=value"),
        ("state=", "profiler option 'state' has no value"),
    ],
)
def test_what_paddle_refuses_is_a_value_error_in_both(text, message):
    for parse in (lenient, ProfilerOptions.parse):
        with pytest.raises(ValueError) as info:
            parse(text)
        assert isinstance(info.value, ProfilerOptionError) and message in str(info.value)


def test_trailing_semicolon_and_spaces_inside_values(caplog):
    # a trailing ';' stops PaddleSpeech's ProfilerOptions (the empty item after it has no '='): the drop-ins too
    with pytest.raises(ValueError, match=r"an empty item .*not enough values to unpack"):
        lenient("batch_range=[50, 60]; profile_path=/tmp/p;")
    o = ProfilerOptions.parse("batch_range=[50, 60]; profile_path=/tmp/my runs/p;")  # speechperf's own: accepted
    assert o.batch_range == (50, 60) and o.profile_path == "/tmp/my runs/p"
    assert warning_lines(caplog) == []
    o = lenient("batch_range=[50, 60]; profile_path=/tmp/my runs/p")
    assert o.batch_range == (50, 60) and o.profile_path == "/tmp/my runs/p"
    assert warning_lines(caplog) == [
        "profile_path='/tmp/my runs/p' keeps its spaces; PaddleSpeech removes them ('/tmp/myruns/p')"
    ]


def test_a_missing_key_is_a_value_error():
    with pytest.raises(ValueError, match="has no option named 'nope'"):
        lenient("")["nope"]
    assert lenient("batch_range=[50, 60]; profile_path=model.profile")["batch_range"] == [50, 60]


def test_t2s_honours_profile_path_and_the_legacy_keys():
    o = lenient("profile_path=/tmp/t2s.json; state=CPU; sorted_key=calls; tracer_option=OpDetail", t2s)
    assert (o.profile_path, o.state, o.sorted_key, o.tracer_option) == ("/tmp/t2s.json", "CPU", "calls", "OpDetail")


def test_strict_true_in_the_drop_ins():
    with pytest.raises(ProfilerOptionError, match="unknown profiler option 'foo'"):
        s2t.ProfilerOptions("foo=1", strict=True)
    with pytest.raises(ProfilerOptionError, match="does not end after it starts"):
        t2s.ProfilerOptions("batch_range=[20,10]", strict=True)


def test_the_flavour_defaults_are_not_given_keys():
    o = lenient("state=CPU", t2s)
    assert o.given == {"state"} and not o.strict  # timer_only and api are t2s defaults, not the loop's choice
    assert ProfilerOptions.parse("state=CPU").strict
