"""The torch step profiler over a tiny training loop of our own (conv + linear speech classifier on random
80-dim features; the reference models of speechperf.zoo are not used here)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from speechperf import get_backend  # noqa: E402


class TinyClassifier(torch.nn.Module):
    def __init__(self, feats=80, hidden=32, classes=5):
        super().__init__()
        self.conv = torch.nn.Conv1d(feats, hidden, 3, padding=1)
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, x):  # x: (batch, feats, frames)
        return self.out(torch.relu(self.conv(x)).mean(-1))


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: more threads only spin
    yield
    torch.set_num_threads(before)


def train(prof, steps, batch=4):
    torch.manual_seed(0)
    model = TinyClassifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, 80, 40), torch.randint(0, 5, (batch,))
    with prof:
        for _ in range(steps):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step(num_samples=batch)
    return prof.summary


def test_records_steps_10_to_19_of_30(tmp_path, one_thread):
    trace = tmp_path / "torch trace.json"
    s = train(get_backend("torch").step_profiler(f"batch_range=[10,20]; profile_path={trace}"), 30)
    assert s.steps == tuple(range(10, 20))
    assert s.trace_path == trace
    events = json.load(open(trace))["traceEvents"]
    assert sorted(e["name"] for e in events if e["name"].startswith("ProfilerStep#")) == [
        f"ProfilerStep#{i}" for i in range(10, 20)
    ]
    # one forward conv, one conv backward and one optimizer step per recorded step
    assert s.op("aten::conv1d").calls == 10
    assert s.op("autograd::engine::evaluate_function: ConvolutionBackward0").calls == 10
    assert s.op("Optimizer.step#SGD.step").calls == 10
    # rows are top-level ops: what runs inside an op or an autograd node is in the trace, not in the table
    assert s.op("aten::convolution") is None and s.op("aten::convolution_backward") is None
    top = {o.name for o in s.top(6)}
    assert "aten::conv1d" in top and "autograd::engine::evaluate_function: ConvolutionBackward0" in top
    totals = [o.total_ns for o in s.ops]
    assert totals == sorted(totals, reverse=True)
    assert s.timing.steps == 10 and s.timing.ips_unit == "samples/s"


def test_sorted_by_calls(tmp_path, one_thread):
    s = train(get_backend("torch").step_profiler(f"batch_range=[2,4]; sorted_key=calls; profile_path={tmp_path}"), 5)
    calls = [o.calls for o in s.ops]
    assert calls == sorted(calls, reverse=True)
    assert s.trace_path == tmp_path / "torch_trace.json" and s.trace_path.exists()


def test_timer_only_gives_ips_and_no_trace(tmp_path, one_thread):
    trace = tmp_path / "never.json"
    s = train(get_backend("torch").step_profiler(f"batch_range=[3,8]; timer_only=1; profile_path={trace}"), 10)
    assert s.ops == () and s.trace_path is None and not trace.exists()
    assert s.timing.steps == 5 and s.timing.ips > 0 and s.timing.ips_unit == "samples/s"


def test_state_gpu_without_cuda_says_so():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(Exception, match=r"state='GPU' needs a CUDA device, but torch .* sees none"):
        get_backend("torch").step_profiler("state=GPU")


def test_a_loop_that_ends_inside_the_range(tmp_path, one_thread):
    s = train(get_backend("torch").step_profiler(f"batch_range=[3,10]; profile_path={tmp_path}"), 5)
    assert s.steps == (3, 4) and s.op("aten::conv1d").calls == 2
    assert "the loop ended after 5 steps" in s.notes[0]
