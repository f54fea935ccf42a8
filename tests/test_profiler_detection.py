"""The drop-ins find the loop's framework from what its step uses, never from what is imported (this process has
imported both torch and paddle, as a PaddleSpeech environment does); the timer figures cover paddle's own timer's
steps. One end-to-end test runs the issue's TIPC string on a torch loop and a paddle loop, each in a process that
imports both frameworks."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import Counter

import pytest

from speechperf.adapters import loop_framework
from speechperf.adapters import paddlespeech as s2t
from speechperf.adapters import paddlespeech_t2s as t2s
from speechperf.adapters.paddlespeech import training_backends
from speechperf.profiler.base import timer_start
from speechperf.profiler.options import ProfilerOptions

torch = pytest.importorskip("torch")
pytest.importorskip("paddle")
from speechperf.backends.paddle import import_paddle  # noqa: E402

paddle = import_paddle()


@pytest.fixture(autouse=True)
def _reset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield
    s2t.reset_profiler_step()
    t2s.reset_profiler_step()


def test_objects_vote_for_their_framework():
    roots = training_backends()

    class Net(torch.nn.Module):  # defined here, not in torch: its bases say torch
        pass

    class Trainer:
        def __init__(self):
            self.model = paddle.nn.Linear(2, 2)
            self.optimizer = paddle.optimizer.SGD(parameters=self.model.parameters())

    assert loop_framework.votes([torch.ones(1), (torch.ones(1), torch.ones(1)), Net()], roots) == Counter(torch=4)
    assert loop_framework.votes([Trainer(), paddle.ones([1])], roots) == Counter(paddle=3)
    assert loop_framework.votes([torch, paddle, len, Net], roots) == Counter()  # modules, functions, classes


def test_decide():
    assert loop_framework.decide(Counter(torch=3, paddle=1), ["paddle", "torch"]) == ("torch", None)
    assert loop_framework.decide(Counter(), ["torch"]) == ("torch", None)
    backend, why = loop_framework.decide(Counter(torch=1, paddle=1), ["paddle", "torch"])
    assert backend == "paddle" and why.startswith("cannot tell which framework the loop trains with (the loop's")
    backend, why = loop_framework.decide(Counter(), ["paddle", "torch"])
    assert backend == "paddle" and "holds no tensor, model or optimizer" in why


def test_a_torch_step_with_both_frameworks_imported_profiles_torch(tmp_path):
    model = torch.nn.Linear(4, 2)
    loss = model(torch.ones(3, 4)).sum()
    loss.backward()
    s2t.add_profiler_step(f"batch_range=[5,9]; profile_path={tmp_path}/")
    assert s2t.current_profiler().backend == "torch"


def test_a_paddle_step_with_both_frameworks_imported_profiles_paddle(tmp_path):
    model = paddle.nn.Linear(4, 2)
    loss = model(paddle.ones([3, 4])).sum()
    loss.backward()
    t2s.add_profiler_step(f"batch_range=[5,9]; profile_path={tmp_path}/")
    assert t2s.current_profiler().backend == "paddle"


def test_objects_passed_decide_before_the_frames(tmp_path):
    batch = torch.ones(2)  # a torch object in the frame, outvoted by what is passed
    t2s.add_profiler_step("batch_range=[5,9]", uses=[paddle.ones([1]), paddle.ones([1])])
    assert t2s.current_profiler().backend == "paddle" and batch.numel() == 2


def test_nothing_to_go_by_is_one_warning_and_paddle(caplog):
    with caplog.at_level(logging.WARNING, logger="speechperf.profiler"):
        t2s.add_profiler_step("batch_range=[5,9]")
    assert t2s.current_profiler().backend == "paddle"
    lines = [r.getMessage() for r in caplog.records if "cannot tell" in r.getMessage()]
    assert len(lines) == 1 and "add backend=torch or backend=paddle" in lines[0]


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("batch_range=[50,60]; timer_window=paddle_timer", 9),
        ("batch_range=[5,20]; timer_window=paddle_timer", 9),
        ("batch_range=[2,10]; timer_window=paddle_timer", 2),  # paddle prints nothing for 10 steps: the range's own
        ("batch_range=[50,60]; timer_window=range", 50),
        ("batch_range=[50,60]", 50),  # speechperf's own default
    ],
)
def test_timer_window(text, first):
    assert timer_start(ProfilerOptions.parse(text)) == first


def test_paddles_timer_averages_the_same_steps():
    """paddle's own timer (the installed paddle/profiler/timer.py), fed known step times 0..59, sums exactly the
    steps ``timer_start`` names: 9..59 for a range ending at 60 (it divides by one fewer)."""
    from paddle.profiler.timer import Event

    event = Event()
    times = [float(2**i) for i in range(60)]  # each sum of steps is unique
    for t in times:
        event.record_batch(t)
    first = timer_start(ProfilerOptions.parse("batch_range=[50,60]; timer_window=paddle_timer"))
    summary = event.get_summary()
    assert summary["batch_summary"]["avg"] * (60 - first - 1) == sum(times[first:])


def test_the_dropins_time_paddles_window(tmp_path):
    """61 calls (steps 0..59) of the t2s drop-in with batch_range=[50,60]: 51 steps timed, 9..59, and a note."""
    model = torch.nn.Linear(2, 2)
    with pytest.raises(SystemExit):
        for _ in range(61):
            model(torch.ones(1, 2))
            t2s.add_profiler_step("batch_range=[50,60]")
    summary = t2s.current_profiler().summary
    assert summary.timing.steps == 51
    assert any(n.startswith("timer figures: steps 9..59, paddle's own timer's window") for n in summary.notes)


TRAINER = """
import sys
import paddle, torch  # both, as in a PaddleSpeech environment
from speechperf.adapters.paddlespeech import add_profiler_step, reset_profiler_step


def train(fw, options):
    nn = torch.nn if fw == "torch" else paddle.nn
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    if fw == "torch":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    else:
        optimizer = paddle.optimizer.SGD(parameters=model.parameters())
    for step in range(40):
        x = torch.randn(4, 8) if fw == "torch" else paddle.randn([4, 8])
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        add_profiler_step(options)


for fw in ("torch", "paddle"):  # one process, so the imports are paid once; the drop-in exits at the range's end
    print(f"== {fw}", flush=True)
    print(f"== {fw}", file=sys.stderr, flush=True)
    try:
        train(fw, sys.argv[1].format(fw=fw))
    except SystemExit as exc:
        assert exc.code == 0, exc.code
    reset_profiler_step()
"""


@pytest.mark.slow
def test_tipc_string_in_a_process_with_both_frameworks(tmp_path):
    """The issue's TIPC string, no backend= key, on a torch loop and a paddle loop in a process that imports both."""
    script = tmp_path / "train.py"
    script.write_text(TRAINER)
    options = f"batch_range=[10,35];state=GPU;tracer_option=Default;profile_path={tmp_path}/{{fw}}/model.profile"
    r = subprocess.run([sys.executable, str(script), options], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    for framework, out, err in zip(("torch", "paddle"), r.stdout.split("== ")[1:], r.stderr.split("== ")[1:]):
        assert f"backend='{framework}'" in err
        assert f"{framework} ops, sorted by total" in out
        assert out.count("Perf Summary") == 1
        trace = tmp_path / framework / ("model.profile" if framework == "torch" else "model.profile.json")
        assert trace.stat().st_size > 0


def test_the_batch_size_of_paddlespeechs_own_option_group_makes_ips_samples_per_second():
    import argparse

    class Trainer:  # PaddleSpeech's trainer keeps its parsed args; its own group, not the drop-in's, parsed them
        def __init__(self):
            self.args = argparse.Namespace(benchmark_batch_size=8, profiler_options="batch_range=[1,3]")

        def after_train_batch(self):
            t2s.add_profiler_step(self.args.profiler_options)

    trainer, model = Trainer(), torch.nn.Linear(2, 2)
    with pytest.raises(SystemExit):
        for _ in range(5):
            model(torch.ones(1, 2))
            trainer.after_train_batch()
    timing = t2s.current_profiler().summary.timing
    assert timing.ips_unit == "samples/s" and timing.samples == (8, 8)
