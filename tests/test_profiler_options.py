"""ProfilerOptions parsing, the uniform summary, and the shared step counting (framework-free)."""

from __future__ import annotations

import pytest

from speechperf.profiler import OpStat, ProfilerOptionError, ProfilerOptions, Recorded, StepProfiler, aggregate
from speechperf.profiler.summary import ProfileSummary, StepTiming, sort_ops


def test_defaults_are_paddlespeech_s():
    o = ProfilerOptions.parse(None)
    assert o == ProfilerOptions.parse("")
    assert (o.batch_range, o.state, o.sorted_key, o.tracer_option, o.profile_path, o.exit_on_finished) == (
        (10, 20),
        "All",
        "total",
        "Default",
        "/tmp/profile",
        True,
    )
    assert (o.timer_only, o.api, o.backend) == (False, "new", None)


def test_paddlespeech_examples_parse():
    o = ProfilerOptions.parse("batch_range=[50, 60]; tracer_option=OpDetail; profile_path=model.profile")
    assert o.batch_range == (50, 60) and o.tracer_option == "OpDetail" and o.profile_path == "model.profile"
    assert o["batch_range"] == [50, 60]  # PaddleSpeech's dict-style access


def test_trailing_semicolon_and_paths_with_spaces():
    o = ProfilerOptions.parse(" batch_range = [1,3] ; profile_path=/tmp/my runs/prof 1.json ; timer_only=Yes; ")
    assert o.batch_range == (1, 3)
    assert o.profile_path == "/tmp/my runs/prof 1.json"
    assert o.timer_only is True


@pytest.mark.parametrize(
    "word,value",
    [
        ("yes", True),
        ("TRUE", True),
        ("t", True),
        ("1", True),
        ("no", False),
        ("False", False),
        ("f", False),
        ("0", False),
    ],
)
def test_booleans(word, value):
    assert ProfilerOptions.parse(f"exit_on_finished={word}").exit_on_finished is value


def test_repr_shows_the_effective_options():
    text = repr(ProfilerOptions.parse("state=CPU; sorted_key=calls"))
    for part in (
        "batch_range=(10, 20)",
        "state='CPU'",
        "sorted_key='calls'",
        "profile_path='/tmp/profile'",
        "exit_on_finished=True",
        "timer_only=False",
        "api='new'",
    ):
        assert part in text


def test_to_string_round_trips():
    o = ProfilerOptions.parse(
        "batch_range=[3,7]; state=GPU; sorted_key=ave; tracer_option=AllOpDetail; "
        "profile_path=/a b/c; exit_on_finished=no; timer_only=yes; api=legacy; backend=torch"
    )
    assert ProfilerOptions.parse(o.to_string()) == o


MALFORMED = [
    ("batch_range=[10]", "batch_range='[10]' has 1 values"),
    ("batch_range=[10,20,30]", "batch_range='[10,20,30]' has 3 values"),
    ("batch_range=[a,20]", "batch_range='[a,20]' is not two integers"),
    ("batch_range=[1.5,20]", "batch_range='[1.5,20]' is not two integers"),
    ("batch_range=[-1,20]", "batch_range='[-1,20]' starts below 0"),
    ("batch_range=[20,10]", "batch_range='[20,10]' does not end after it starts"),
    ("batch_range=[10,10]", "batch_range='[10,10]' does not end after it starts"),
    ("batch_range=[10,20", "batch_range='[10,20' has unbalanced brackets"),
    ("state=cpu", "state='cpu' is not allowed (did you mean 'CPU'?); allowed: CPU, GPU, All"),
    ("state=TPU", "state='TPU' is not allowed (did you mean 'GPU'?); allowed: CPU, GPU, All"),
    ("sorted_key=avg", "sorted_key='avg' is not allowed (did you mean 'ave'?); allowed: calls, total, max, min, ave"),
    (
        "tracer_option=Detail",
        "tracer_option='Detail' is not allowed (did you mean 'OpDetail'?); allowed: Default, OpDetail, AllOpDetail",
    ),
    ("exit_on_finished=maybe", "exit_on_finished='maybe' is not a boolean; allowed: yes/true/t/1 or no/false/f/0"),
    ("timer_only=2", "timer_only='2' is not a boolean"),
    ("api=old", "api='old' is not allowed; allowed: new, legacy"),
    ("profile_path=", "profiler option 'profile_path' has no value"),
    ("batchrange=[10,20]", "unknown profiler option 'batchrange' (did you mean 'batch_range'?)"),
    ("batch_range", "profiler option 'batch_range' is not key=value"),
    ("=CPU", "profiler option '=CPU' is not key=value"),
    ("state=CPU; state=GPU", "profiler option 'state' is given twice"),
    ("backend=to rch", "backend='to rch' is not a backend name"),
]


@pytest.mark.parametrize("text,message", MALFORMED, ids=[t for t, _ in MALFORMED])
def test_malformed_option_strings_give_their_error(text, message):
    assert len(MALFORMED) >= 15
    with pytest.raises(ProfilerOptionError) as info:
        ProfilerOptions.parse(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_direct_construction_is_validated_too():
    with pytest.raises(ProfilerOptionError, match=r"batch_range=\[5, 2\] is not allowed"):
        ProfilerOptions(batch_range=(5, 2))


def test_aggregate_and_sort_by_each_key():
    ops = aggregate([("a", 10), ("b", 50), ("a", 30), ("c", 5), ("c", 5), ("c", 5)])
    by = {o.name: o for o in ops}
    assert by["a"] == OpStat("a", 2, 40, 30, 10) and by["a"].avg_ns == 20
    assert [o.name for o in sort_ops(ops, "total")] == ["b", "a", "c"]
    assert [o.name for o in sort_ops(ops, "calls")] == ["c", "a", "b"]
    assert [o.name for o in sort_ops(ops, "max")] == ["b", "a", "c"]
    assert [o.name for o in sort_ops(ops, "min")] == ["b", "a", "c"]
    assert [o.name for o in sort_ops(ops, "ave")] == ["b", "a", "c"]


def test_step_timing_ips():
    t = StepTiming((1_000_000, 3_000_000), (8, 8))
    assert t.ips == pytest.approx(16 / 0.004) and t.ips_unit == "samples/s"
    t = StepTiming((1_000_000, 3_000_000), (None, 8))
    assert t.ips == pytest.approx(2 / 0.004) and t.ips_unit == "steps/s"


def test_summary_table_has_the_uniform_columns():
    """The summary prints the profile document's console view to the stream it is given."""
    import io

    s = ProfileSummary("fake", "total", ops=(OpStat("conv", 10, 2_500_000, 400_000, 100_000),))
    out = io.StringIO()
    s.render(out)
    text = out.getvalue()
    for column in ("op", "calls", "total ms", "avg ms", "max ms", "min ms"):
        assert column in text
    assert "conv" in text and "2.500" in text and "0.250" in text and "0.400" in text and "0.100" in text


class FakeProfiler(StepProfiler):
    """Records what the shared step counting asks a backend to do."""

    backend = "fake"
    source = "fake"

    def __init__(self, options=None, warmup=1):
        self.warmup_steps = warmup
        super().__init__(options, echo=False)
        self.calls = []

    def _open(self, step):
        self.calls.append(("open", step))

    def _advance(self, step, num_samples):
        self.calls.append(("advance", step))

    def _close(self):
        self.calls.append(("close", self.step_num))
        return Recorded(ops=[OpStat("op", 1, 1, 1, 1)], steps=tuple(range(self.options.batch_range[0], self.step_num)))


def run(prof, steps, samples=4):
    with prof:
        for _ in range(steps):
            prof.step(num_samples=samples)
    return prof


def test_steps_in_batch_range_are_recorded_with_one_warmup_step():
    prof = run(FakeProfiler("batch_range=[10,20]"), 30)
    assert prof.calls == [("open", 9), *(("advance", s) for s in range(10, 20)), ("close", 20)]
    assert prof.finished and prof.summary.timing.steps == 10 and prof.summary.steps == tuple(range(10, 20))


def test_without_warmup_and_from_step_zero():
    prof = run(FakeProfiler("batch_range=[10,20]", warmup=0), 30)
    assert prof.calls[0] == ("open", 10) and prof.calls[-1] == ("close", 20)
    prof = run(FakeProfiler("batch_range=[0,3]"), 5)
    assert prof.calls == [("open", 0), ("advance", 1), ("advance", 2), ("close", 3)]


def test_timer_only_opens_no_profiler_and_reports_ips():
    prof = run(FakeProfiler("batch_range=[2,5]; timer_only=true"), 8, samples=16)
    assert prof.calls == []
    s = prof.summary
    assert s.ops == () and s.trace_path is None and s.timing.steps == 3
    assert s.timing.ips_unit == "samples/s" and s.timing.ips > 0


def test_a_loop_that_ends_early_says_so():
    prof = run(FakeProfiler("batch_range=[10,20]"), 14)
    assert prof.calls[-1] == ("close", 14)
    assert "the loop ended after 14 steps" in prof.summary.notes[0]
    assert "steps 10..13 were recorded" in prof.summary.notes[0]
    prof = run(FakeProfiler("batch_range=[10,20]"), 3)
    assert prof.calls == [] and "no step was recorded" in prof.summary.notes[0]


def test_an_exception_in_the_loop_stops_the_profiler_and_propagates():
    prof = FakeProfiler("batch_range=[2,6]")
    with pytest.raises(RuntimeError, match="boom"):
        with prof:
            for i in range(10):
                if i == 4:
                    raise RuntimeError("boom")
                prof.step()
    assert prof.calls[-1] == ("close", 4) and prof.summary is None


def test_backend_key_must_match_the_profiler():
    with pytest.raises(ProfilerOptionError, match="backend='torch' in the profiler options, but this is the 'fake'"):
        FakeProfiler("backend=torch")
