"""The PaddleSpeech drop-ins: add_profiler_step, ProfilerOptions and the "Benchmark Options" group, and a
PaddleSpeech-style trainer (the one in the adapter's docstring) training a tiny model of our own (conv + linear
speech classifier on random 80-dim features) on torch and on paddle through the hook."""

from __future__ import annotations

import argparse
import sys

import click
import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.adapters import paddlespeech as ps
from speechperf.profiler import OpStat, ProfilerOptionError, Recorded, StepProfiler
from speechperf.registry import register_backend, unregister_backend


class CountingProfiler(StepProfiler):
    backend = "fakeprof"

    def __init__(self, options):
        super().__init__(options, echo=False)
        self.calls = []

    def _open(self, step):
        self.calls.append(("open", step))

    def _advance(self, step, num_samples):
        self.calls.append(("advance", step))

    def _close(self):
        self.calls.append(("close", self.step_num))
        return Recorded(ops=[OpStat("op", 1, 1, 1, 1)])


class FakeBackend:
    name = "fakeprof"
    made = 0

    def step_profiler(self, options):
        FakeBackend.made += 1
        return CountingProfiler(options)


@pytest.fixture(autouse=True)
def fresh_hook():
    ps.reset_profiler_step()
    register_backend("fakeprof", FakeBackend)
    FakeBackend.made = 0
    yield
    ps.reset_profiler_step()
    unregister_backend("fakeprof")


def test_none_is_a_no_op():
    for _ in range(30):
        ps.add_profiler_step(None)
    assert ps.current_profiler() is None and FakeBackend.made == 0


def test_each_call_is_a_step_and_the_options_are_parsed_once():
    options = "batch_range=[10,20]; exit_on_finished=false; backend=fakeprof"
    ps.add_profiler_step(options)
    for _ in range(40):
        ps.add_profiler_step("this string is not parsed again")
    prof = ps.current_profiler()
    assert FakeBackend.made == 1
    assert prof.calls == [("open", 9), *(("advance", s) for s in range(10, 20)), ("close", 20)]
    assert prof.finished and prof.summary.timing.steps == 11  # paddle's timer window: steps 9..19


def test_backend_argument_and_default_backend():
    ps.add_profiler_step("exit_on_finished=false", backend="fakeprof")
    assert FakeBackend.made == 1
    assert ps.DEFAULT_BACKEND == "paddle"


def test_exits_with_status_0_when_the_range_ends():
    ps.add_profiler_step("batch_range=[1,3]; backend=fakeprof")  # call 1 begins step 0
    ps.add_profiler_step("x")  # step 1
    ps.add_profiler_step("x")  # step 2
    with pytest.raises(SystemExit) as info:
        ps.add_profiler_step("x")  # step 2 ends: the range [1,3) is over
    assert info.value.code == 0
    assert ps.current_profiler().summary.timing.steps == 2


def test_a_malformed_string_fails_on_the_first_call():
    with pytest.raises(ProfilerOptionError, match="state='gpu' is not allowed"):
        ps.add_profiler_step("state=gpu")


def test_paddlespeech_constructor_name():
    assert ps.ProfilerOptions("batch_range=[50, 60]; profile_path=model.profile")["batch_range"] == [50, 60]


def test_argparse_benchmark_options(capsys):
    parser = argparse.ArgumentParser()
    group = ps.add_benchmark_options(parser)
    assert group.title == "Benchmark Options"
    args = parser.parse_args(
        [
            "--profiler-options",
            "batch_range=[5,9]; state=CPU",
            "--benchmark-batch-size",
            "8",
            "--benchmark-max-step",
            "40",
        ]
    )
    assert (args.profiler_options, args.benchmark_batch_size, args.benchmark_max_step) == (
        "batch_range=[5,9]; state=CPU",
        8,
        40,
    )
    assert parser.parse_args([]).profiler_options is None
    # PaddleSpeech's trainers never call the hook with an empty string (t2s: if self.profiler_options:)
    assert parser.parse_args(["--profiler-options", ""]).profiler_options == ""
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--profiler-options", "sorted_key=avg"])
    assert info.value.code == 2
    assert (
        "sorted_key='avg' is not allowed (did you mean 'ave'?); allowed: calls, total, max, min, ave"
        in capsys.readouterr().err
    )


def test_click_benchmark_options():
    @click.command()
    @ps.benchmark_options
    def train(profiler_options, benchmark_batch_size, benchmark_max_step):
        click.echo(f"{profiler_options}|{benchmark_batch_size}|{benchmark_max_step}")

    ok = CliRunner().invoke(train, ["--profiler-options", "batch_range=[1,2]", "--benchmark-max-step", "3"])
    assert ok.exit_code == 0 and ok.output.strip() == "batch_range=[1,2]|None|3"
    # what PaddleSpeech ignores is warned about at the first step; what it cannot read is refused at parse time
    kept = CliRunner().invoke(train, ["--profiler-options", "batch_range=[2,1]"])
    assert kept.exit_code == 0 and kept.output.strip() == "batch_range=[2,1]|None|None"
    bad = CliRunner().invoke(train, ["--profiler-options", "batch_range=[a,1]"])
    assert bad.exit_code == 2 and "batch_range='[a,1]' is not integers" in bad.output
    assert "--benchmark-batch-size" in CliRunner().invoke(train, ["--help"]).output


# -- a PaddleSpeech-style trainer, as in the adapter's docstring, on real frameworks ---------------------------------


class Trainer:
    """PaddleSpeech's s2t Trainer loop, reduced to what the hook needs."""

    def __init__(self, args, train_batch):
        self.args, self.iteration, self.train_batch = args, 0, train_batch

    def after_train_batch(self):
        if self.args.benchmark_max_step:
            ps.add_profiler_step(self.args.profiler_options)
            if self.iteration > self.args.benchmark_max_step:
                sys.exit(0)

    def train(self, batches):
        for batch in batches:
            self.train_batch(batch)
            self.iteration += 1
            self.after_train_batch()


def parse(argv):
    parser = argparse.ArgumentParser()
    ps.add_benchmark_options(parser)
    return parser.parse_args(argv)


def torch_train_batch(request):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: more threads only spin
    request.addfinalizer(lambda: torch.set_num_threads(before))
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv1d(80, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool1d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 5),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def train_batch(batch):
        x, y = (torch.from_numpy(a) for a in batch)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return train_batch


def paddle_train_batch(request):
    pytest.importorskip("paddle")
    from speechperf.backends.paddle import import_paddle

    paddle = import_paddle()
    paddle.seed(0)
    model = paddle.nn.Sequential(
        paddle.nn.Conv1D(80, 32, 3, padding=1),
        paddle.nn.ReLU(),
        paddle.nn.AdaptiveAvgPool1D(1),
        paddle.nn.Flatten(),
        paddle.nn.Linear(32, 5),
    )
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())

    def train_batch(batch):
        x, y = (paddle.to_tensor(a) for a in batch)
        loss = paddle.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()

    return train_batch


def batches(n, batch=4):
    rng = np.random.default_rng(0)
    for _ in range(n):
        yield rng.standard_normal((batch, 80, 30)).astype(np.float32), rng.integers(0, 5, batch).astype(np.int64)


@pytest.mark.parametrize(
    "backend_key,make,conv_op",
    [
        ("; backend=torch", torch_train_batch, "aten::conv1d"),
        ("; backend=paddle", paddle_train_batch, "conv2d pybind_imperative_func"),  # s2t: the legacy API
    ],
    ids=["torch", "paddle"],
)
def test_trainer_hook_profiles_a_training_loop(request, tmp_path, backend_key, make, conv_op):
    trace = tmp_path / "trace.json"
    args = parse(
        ["--benchmark-max-step", "50", "--profiler-options", f"batch_range=[3,6]; profile_path={trace}{backend_key}"]
    )
    trainer = Trainer(args, make(request))
    with pytest.raises(SystemExit) as info:
        trainer.train(batches(50))
    assert info.value.code == 0
    # the hook's first call begins step 0, so steps 3..5 are iterations 4..6 and the range ends after iteration 7
    assert trainer.iteration == 7
    s = ps.current_profiler().summary
    assert s.steps == (3, 4, 5) and s.op(conv_op).calls == 3 and trace.exists()
