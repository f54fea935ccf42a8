"""The PaddleSpeech drop-ins (s2t and t2s) over real training loops: a small conv + LSTM classifier on random 80-dim
features, trained with Adam from a real DataLoader, on paddle and on torch. Tests in this process pass ``backend=``
(pytest imports both frameworks); the docs' trainer scripts run in fresh processes, where the framework is detected.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from speechperf.adapters import paddlespeech as s2t
from speechperf.adapters import paddlespeech_t2s as t2s
from speechperf.profiler.categories import CategoryTable

torch = pytest.importorskip("torch")
pytest.importorskip("paddle")
from speechperf.backends.paddle import import_paddle  # noqa: E402

paddle = import_paddle()

ROOT = Path(__file__).resolve().parents[1]
BATCH = 4
# batch_range starting low leaves paddle's new API a short warm-up; it says so, and that is expected here
pytestmark = pytest.mark.filterwarnings("ignore:Profiler will record data after enabling profiler:UserWarning")


@pytest.fixture(autouse=True)
def fresh_hooks():
    s2t.reset_profiler_step()
    t2s.reset_profiler_step()
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # paddle eager runs one thread; 2 shared cores
    yield
    s2t.reset_profiler_step()
    t2s.reset_profiler_step()
    torch.set_num_threads(before)


def torch_loop(n):
    torch.manual_seed(0)

    class ConvLSTM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(80, 32, 3, padding=1)
            self.lstm = torch.nn.LSTM(32, 32, batch_first=True)
            self.out = torch.nn.Linear(32, 5)

        def forward(self, x):
            h, _ = self.lstm(torch.relu(self.conv(x)).transpose(1, 2))
            return self.out(h.mean(1))

    model = ConvLSTM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(torch.randn(n * BATCH, 80, 30), torch.randint(0, 5, (n * BATCH,)))
    for x, y in torch.utils.data.DataLoader(data, batch_size=BATCH):
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        yield


def paddle_loop(n):
    paddle.seed(0)

    class ConvLSTM(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = paddle.nn.Conv1D(80, 32, 3, padding=1)
            self.lstm = paddle.nn.LSTM(32, 32)
            self.out = paddle.nn.Linear(32, 5)

        def forward(self, x):
            h, _ = self.lstm(paddle.nn.functional.relu(self.conv(x)).transpose([0, 2, 1]))
            return self.out(h.mean(1))

    model = ConvLSTM()
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    data = paddle.io.TensorDataset([paddle.randn([n * BATCH, 80, 30]), paddle.randint(0, 5, [n * BATCH])])
    for x, y in paddle.io.DataLoader(data, batch_size=BATCH):
        paddle.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.clear_grad()
        yield


LOOPS = {"torch": torch_loop, "paddle": paddle_loop}


def train(module, options, framework, steps, backend="same", **kwargs):
    """Call the hook after every step of a real training loop, as PaddleSpeech's trainer does; returns
    (iterations run, the SystemExit code or None)."""
    backend = framework if backend == "same" else backend
    done = 0
    try:
        for _ in LOOPS[framework](steps):
            done += 1
            module.add_profiler_step(options, backend=backend, **kwargs)
    except SystemExit as exc:
        return done, exc.code
    return done, None


def warning_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "speechperf.profiler" and r.levelno == logging.WARNING]


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_paddlespeech_example_string_exits_at_batch_range_end(tmp_path, monkeypatch, capfd, framework):
    monkeypatch.chdir(tmp_path)
    ran, code = train(s2t, "batch_range=[50, 60]; profile_path=model.profile", framework, 70, num_samples=BATCH)
    # the first call begins step 0, steps 50..59 are iterations 51..60, the range ends at the call after 61
    assert (ran, code) == (61, 0)
    s = s2t.current_profiler().summary
    # the op table holds steps 50..59; the timer figures paddle's own timer's steps 9..59
    assert s.steps == tuple(range(50, 60)) and s.timing.steps == 51 and s.timing.ips_unit == "samples/s"
    out = capfd.readouterr()  # paddle's own report is written by C++, to the file descriptor
    assert f"backend='{framework}'" in out.err  # the logged options show the backend used
    if framework == "paddle":  # s2t: PaddleSpeech's legacy profiler, its report and its profile file
        assert s.raw_path == tmp_path / "model.profile" and s.raw_path.stat().st_size > 0
        assert s.op("conv2d pybind_imperative_func").calls == 10 and "Profiling Report" in out.out
        assert s.trace_path == tmp_path / "model.profile.json"
    else:
        assert s.trace_path == tmp_path / "model.profile" and s.op("aten::lstm").calls == 10
        assert "api='new'" in out.err  # s2t's legacy default is paddle's; torch has one API
    assert json.loads(s.trace_path.read_text())["traceEvents"]


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_tracer_option_opdetail(tmp_path, caplog, framework):
    options = f"batch_range=[2, 4]; tracer_option=OpDetail; profile_path={tmp_path}/"
    assert train(s2t, options, framework, 10)[1] == 0
    s = s2t.current_profiler().summary
    if framework == "paddle":
        assert any("tracer_option=OpDetail changes nothing paddlepaddle" in w for w in warning_lines(caplog))
        assert s.op("backward").calls == 2
    else:  # torch records input shapes
        events = json.loads(s.trace_path.read_text())["traceEvents"]
        conv = next(e for e in events if e.get("name") == "aten::conv1d")
        assert conv["args"]["Input Dims"][0] == [BATCH, 80, 30]
        assert warning_lines(caplog) == []


def test_empty_string_means_the_defaults(tmp_path):
    ran, code = train(s2t, "", "torch", 25)
    assert (ran, code) == (21, 0)
    s = s2t.current_profiler().summary
    assert s.steps == tuple(range(10, 20))
    # PaddleSpeech's /tmp/profile made this process's own, so that two runs at once never share it
    own = Path(f"/tmp/profile.pid{os.getpid()}")
    try:
        assert s.trace_path in (own, own / "torch_trace.json")
    finally:  # this process's own files: nothing else writes them
        for leftover in (own, own.with_name(f"{own.name}.categories.json")):
            leftover.unlink(missing_ok=True)


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_t2s_default_is_timer_only_with_paddles_figures(tmp_path, monkeypatch, capsys, framework):
    monkeypatch.chdir(tmp_path)
    assert train(t2s, "batch_range=[3,8]", framework, 12, num_samples=BATCH)[1] == 0
    s = t2s.current_profiler().summary
    assert s.ops == () and s.categories is None and s.trace_path is None and not (tmp_path / "profiler_log").exists()
    t = s.timing
    assert t.steps == 5 and t.has_reader and t.ips_unit == "samples/s"
    perf = t.perf_summary()
    assert 0 < perf["reader_cost"]["avg"] < perf["batch_cost"]["avg"]
    assert perf["ips"]["avg"] == pytest.approx(5 * BATCH / sum(t.step_ns) * 1e9)
    out = capsys.readouterr().out
    assert re.search(r"\|\s+reader_cost\s+\|\s+[\d.]+\s+\|", out) and "IPS Unit: samples/s" in out


def test_t2s_full_profile_prints_paddles_own_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # 11 steps: paddle's own timer, which runs with its profiler, would print a summary of its own (over 10 steps)
    assert train(t2s, "batch_range=[3,14]; timer_only=False", "paddle", 16)[1] == 0
    s = t2s.current_profiler().summary
    # t2s's profiler_log/, with a folder of this process's own (PaddleSpeech names its files by process id too)
    assert s.trace_path == tmp_path / "profiler_log" / f"pid{os.getpid()}" / "paddle_trace.json"
    assert s.trace_path.exists()
    assert s.op("conv2d dygraph").calls == 11
    out = capsys.readouterr().out
    assert "Operator Summary" in out and "Time unit: ms" in out  # paddle's summary(op_detail=True, time_unit='ms')
    assert out.count("Perf Summary") == 1  # the drop-in's; paddle's own timer is not printed too


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_category_table_sums_to_the_step(tmp_path, framework):
    # timer_window=range: the wall-clock steps compared below are the recorded ones
    train(s2t, f"batch_range=[4,14]; api=new; timer_window=range; profile_path={tmp_path}/", framework, 20)
    s = s2t.current_profiler().summary
    c = s.categories
    assert c.steps == 10
    rows = dict((name, ms) for name, ms, _ in c.rows())
    # the model's parts land in their categories on both frameworks
    for category in ("conv", "rnn", "matmul/linear", "optimizer", "backward total"):
        assert rows[category] > 0, (category, rows)
    # no op is counted twice: the ops fit in the step, and every row together is the step the profiler recorded
    assert 0 <= c.ops_ns <= c.step_ns
    assert sum(ms for _, ms, _ in c.rows()) == pytest.approx(c.step_ns / c.steps / 1e6)
    assert sum(share for _, _, share in c.rows()) == pytest.approx(1.0)
    # written beside the trace, for speechperf profile-compare
    assert s.categories_path == s.trace_path.with_name(s.trace_path.stem + ".categories.json")
    assert CategoryTable.read(s.categories_path) == c
    # the recorded step is the wall-clock step less the profiler's own step bookkeeping
    wall = sum(s.timing.step_ns)
    assert abs(c.step_ns - wall) <= 0.1 * wall, (c.step_ns, wall)


def test_legacy_category_table_has_backward_in_one_row(tmp_path):
    train(s2t, f"batch_range=[2,6]; profile_path={tmp_path}/", "paddle", 8)
    c = s2t.current_profiler().summary.categories
    assert c.ns("backward total") == s2t.current_profiler().summary.op("backward").total_ns
    assert 0 <= c.ops_ns <= c.step_ns


def test_a_paddle_profiler_over_a_torch_loop_warns_of_0_ops(tmp_path, caplog):
    train(s2t, f"batch_range=[2,4]; api=new; profile_path={tmp_path}/", "torch", 6, backend="paddle")
    assert s2t.current_profiler().summary.ops == ()
    assert (
        "the paddle profiler recorded 0 ops in steps 2..3: the loop runs no paddle op; give backend= for the "
        "framework it uses (backend=torch, backend=paddle)"
    ) in warning_lines(caplog)


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_state_gpu_without_a_gpu_warns_and_profiles_the_cpu(tmp_path, caplog, framework):
    if torch.cuda.is_available() or paddle.device.cuda.device_count() > 0:
        pytest.skip("this machine has a GPU")
    train(s2t, f"batch_range=[1,3]; state=GPU; profile_path={tmp_path}/", framework, 5)
    assert s2t.current_profiler().summary.ops
    assert any(re.search(r"state='GPU' needs a .*; state=CPU is used$", w) for w in warning_lines(caplog))


def test_api_legacy_on_torch_warns(tmp_path, caplog):
    train(s2t, f"batch_range=[1,3]; api=legacy; profile_path={tmp_path}/", "torch", 5)
    assert s2t.current_profiler().summary.op("aten::lstm").calls == 2
    assert warning_lines(caplog) == [
        "api=legacy is a paddle option; torch has one profiler API, torch.profiler; torch.profiler is used"
    ]


def test_exit_on_finished_in_a_step_profiler_of_ones_own_warns(tmp_path, caplog):
    from speechperf import get_backend

    with get_backend("torch").step_profiler(f"batch_range=[1,2]; exit_on_finished=true; profile_path={tmp_path}/") as p:
        for _ in torch_loop(3):
            p.step()
    assert p.finished and "a step profiler used directly does not end the process" in warning_lines(caplog)[0]


@pytest.mark.parametrize("flag", ["--profiler-options", "--profiler_options"])
@pytest.mark.parametrize("module", [s2t, t2s], ids=["s2t", "t2s"])
def test_both_cli_spellings_and_the_batch_size(tmp_path, flag, module):
    parser = argparse.ArgumentParser()
    module.add_benchmark_options(parser)
    args = parser.parse_args([flag, f"batch_range=[2,5]; profile_path={tmp_path}/", "--benchmark-batch-size", "4"])
    assert args.profiler_options.startswith("batch_range=[2,5]") and args.benchmark_batch_size == 4
    train(module, args.profiler_options, "torch", 8)  # no num_samples: --benchmark-batch-size is each step's count
    t = module.current_profiler().summary.timing
    assert t.samples == (4, 4, 4) and t.ips_unit == "samples/s"


@pytest.mark.parametrize("flag", ["--profiler-options", "--profiler_options"])
def test_click_spellings(flag):
    @click.command()
    @t2s.benchmark_options
    def main(profiler_options, benchmark_batch_size, benchmark_max_step):
        click.echo(f"{profiler_options}|{benchmark_batch_size}")

    result = CliRunner().invoke(main, [flag, "batch_range=[1,2]", "--benchmark-batch-size", "8"])
    assert result.exit_code == 0 and result.output.strip() == "batch_range=[1,2]|8"


# -- the docs' trainer scripts, unchanged, in fresh processes ------------------------------------------------------


def docs_example(name: str) -> str:
    text = (ROOT / "docs" / "profiler.md").read_text()
    match = re.search(rf"```python\n# docs example: {re.escape(name)}\n(.*?)```", text, re.S)
    assert match, f"docs/profiler.md has no example {name}"
    return match.group(1)


def run_script(tmp_path, name, *args, replace=None):
    code = docs_example(name)
    if replace:
        code = code.replace(*replace)
    script = tmp_path / name
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


@pytest.mark.slow
def test_docs_paddle_trainer_runs_as_paddlespeechs(tmp_path):
    profile = tmp_path / "paddle.profile"
    r = run_script(
        tmp_path,
        "train_paddle.py",
        "--benchmark-max-step=40",
        "--profiler-options",
        f"batch_range=[3,6]; profile_path={profile}",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "backend='paddle'" in r.stderr and "api='legacy'" in r.stderr  # detected: only paddle is imported
    assert "Profiling Report" in r.stdout and "paddle step by category (3 steps)" in r.stdout
    assert "Reach benchmark-max-step" not in r.stdout  # it exited when the range ended, as PaddleSpeech does
    assert profile.stat().st_size > 0 and Path(f"{profile}.json").exists()


@pytest.mark.slow
def test_two_trainers_at_once_on_the_default_path_each_print_their_own_summary(tmp_path):
    """TIPC's strings may leave profile_path at its default: two trainers started together on it each write, read
    back and summarise their own profile (the default gets the process id), none crashes or reads the other's."""
    script = tmp_path / "train_paddle.py"
    script.write_text(docs_example("train_paddle.py"))
    args = [sys.executable, str(script), "--benchmark-max-step=40", "--profiler-options", "batch_range=[3,6]"]
    runs = [subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    runs.append(subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [run.communicate(timeout=180) for run in runs]
    paths = []
    for run, (out, err) in zip(runs, outs):
        own = f"/tmp/profile.pid{run.pid}"
        try:
            assert run.returncode == 0, err[-2000:]
            assert "paddle step by category (3 steps)" in out and "Exception ignored" not in err
            assert f"profile_path not given: the profile goes to {own!r}" in err
            assert Path(own).stat().st_size > 0 and Path(f"{own}.json").exists()
            paths.append(own)
        finally:
            for leftover in (own, f"{own}.json", f"{own}.categories.json"):
                Path(leftover).unlink(missing_ok=True)
    assert len(set(paths)) == 2


@pytest.mark.slow
def test_docs_paddle_trainer_with_the_t2s_import(tmp_path):
    r = run_script(
        tmp_path,
        "train_paddle.py",
        "--benchmark-max-step=40",
        "--profiler_options",
        "batch_range=[3,6]",
        replace=("speechperf.adapters.paddlespeech import", "speechperf.adapters.paddlespeech_t2s import"),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "timer_only=True" in r.stderr and "Perf Summary" in r.stdout and "reader_cost" in r.stdout
    assert "by category" not in r.stdout and not (tmp_path / "profiler_log").exists()


@pytest.mark.slow
def test_docs_torch_trainer_detects_torch_and_stops_inside_the_range(tmp_path):
    trace = tmp_path / "t.json"
    r = run_script(
        tmp_path,
        "train_torch.py",
        "--benchmark-max-step",
        "5",
        "--benchmark-batch-size",
        "4",
        "--profiler-options",
        f"batch_range=[3,10]; profile_path={trace}",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "backend='torch'" in r.stderr and "api='new'" in r.stderr  # only torch is imported
    assert "aten::lstm" in r.stdout and "IPS Unit: samples/s" in r.stdout
    # --benchmark-max-step 5 is below batch_range[1]: the trainer exits, and the profiler says what it recorded
    assert "Reach benchmark-max-step: 5" in r.stdout
    note = "the loop ended after 5 steps, before batch_range [3, 10] ended; steps 3..4 were recorded"
    assert note in r.stderr and note in r.stdout
    assert "torch step by category (2 steps)" in r.stdout and trace.exists()


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_state_gpu_with_timer_only_warns_of_nothing(tmp_path, monkeypatch, caplog, framework):
    if torch.cuda.is_available() or paddle.device.cuda.device_count() > 0:
        pytest.skip("this machine has a GPU")
    monkeypatch.chdir(tmp_path)
    train(t2s, "batch_range=[1,3]; state=GPU", framework, 5)  # t2s: timer_only, no profiler started
    assert t2s.current_profiler().summary.timing.steps == 2 and warning_lines(caplog) == []


def test_torch_ops_without_a_roof_say_why_not_that_torch_counts_no_flops(tmp_path, capsys):
    train(s2t, f"batch_range=[1,3]; profile_path={tmp_path}/", "torch", 5)
    assert any(o.flops for o in s2t.current_profiler().summary.ops)
    out = capsys.readouterr().out
    assert "ops below the roof: no compute roof is known in this loop" in out and "counts no FLOPs" not in out
