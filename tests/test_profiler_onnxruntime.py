"""The onnxruntime step profiler over a tiny ONNX graph of our own (conv + relu + mean + matmul on 80-dim
features), built with onnx.helper."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from speechperf import ModelSpec, get_backend  # noqa: E402


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((32, 80, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(np.zeros(32, np.float32), "B"),
        numpy_helper.from_array(rng.standard_normal((32, 5)).astype(np.float32), "L"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("ReduceMean", ["r"], ["m"], axes=[2], keepdims=0, name="mean"),
        helper.make_node("MatMul", ["m", "L"], ["logits"], name="linear"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 80, "T"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["B", 5])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("onnx") / "tiny.onnx"
    onnx.save(model, path)
    return path


def infer(prof, session, steps, calls_per_step=1, batch=4):
    x = np.random.default_rng(1).standard_normal((batch, 80, 40)).astype(np.float32)
    with prof:
        run = prof.attach(session)
        for _ in range(steps):
            for _ in range(calls_per_step):
                run({"x": x})
            prof.step(num_samples=batch)
    return prof.summary


def test_records_steps_10_to_19_of_30(tmp_path, tiny_onnx):
    backend = get_backend("onnxruntime")
    session = backend.load(ModelSpec(tiny_onnx), threads=1)
    trace = tmp_path / "ort trace.json"
    s = infer(backend.step_profiler(f"batch_range=[10,20]; profile_path={trace}"), session, 30)
    assert s.steps == tuple(range(10, 20))
    events = json.load(open(trace))["traceEvents"]
    assert [e["name"] for e in events if e["name"].startswith("ProfilerStep#")] == [
        f"ProfilerStep#{i}" for i in range(10, 20)
    ]
    assert sum(e["name"] == "model_run" for e in events) == 10  # ORT's own run events: the warm-up run is left out
    assert not any(e["name"] == "session_initialization" for e in events)
    assert not list(tmp_path.glob("*.ort*"))  # ORT's timestamped file was removed
    # ORT fuses Conv+Relu into FusedConv at the default optimization level
    assert s.op("FusedConv").calls == 10 and s.op("MatMul").calls == 10 and s.op("ReduceMean").calls == 10
    assert "FusedConv" in {o.name for o in s.top(2)}
    assert s.op("FusedConv").min_ns > s.op("MatMul").min_ns  # the min is robust to a preempted call
    assert s.timing.steps == 10 and s.timing.ips_unit == "samples/s"


def test_several_calls_per_step_and_the_original_session_after(tmp_path, tiny_onnx):
    backend = get_backend("onnxruntime")
    session = backend.load(ModelSpec(tiny_onnx), threads=1)
    prof = backend.step_profiler(f"batch_range=[2,4]; profile_path={tmp_path}; sorted_key=calls")
    x = np.zeros((1, 80, 10), np.float32)
    with prof:
        run = prof.attach(session)
        assert run is not session  # a stand-in that sends the calls to a profiling twin during the range
        for step in range(6):
            for _ in range(3):
                run({"x": x})
            assert (run.current is session) == (step < 1 or step > 3)  # the twin runs steps 1 (warm-up) to 3
            prof.step()
    s = prof.summary
    assert s.steps == (2, 3) and s.op("FusedConv").calls == 6
    assert s.trace_path == tmp_path / "onnxruntime_trace.json"
    assert run.current is session and run.calls == 18


def test_timer_only_gives_ips_and_no_trace(tmp_path, tiny_onnx):
    backend = get_backend("onnxruntime")
    session = backend.load(ModelSpec(tiny_onnx), threads=1)
    trace = tmp_path / "never.json"
    s = infer(backend.step_profiler(f"batch_range=[3,8]; timer_only=yes; profile_path={trace}"), session, 10)
    assert s.ops == () and s.trace_path is None and not trace.exists() and not list(tmp_path.iterdir())
    assert s.timing.steps == 5 and s.timing.ips > 0


def test_a_loop_without_an_attached_session_is_told_how(tiny_onnx):
    prof = get_backend("onnxruntime").step_profiler("batch_range=[0,2]")
    with pytest.raises(Exception, match=r"step 1: no session to profile; .* call `session = prof.attach\(session\)`"):
        with prof:
            prof.step()


def test_state_gpu_needs_a_cuda_session(tiny_onnx):
    session = get_backend("onnxruntime").load(ModelSpec(tiny_onnx), threads=1)
    with pytest.raises(Exception, match="state='GPU' needs a session on device 'cuda'; this one runs on 'cpu'"):
        get_backend("onnxruntime").step_profiler("state=GPU").attach(session)


def test_a_loop_that_ends_inside_the_range(tmp_path, tiny_onnx):
    backend = get_backend("onnxruntime")
    session = backend.load(ModelSpec(tiny_onnx), threads=1)
    s = infer(backend.step_profiler(f"batch_range=[3,10]; profile_path={tmp_path}"), session, 5)
    assert s.steps == (3, 4) and s.op("FusedConv").calls == 2
    assert "the loop ended after 5 steps" in s.notes[0]
