"""What the core gives every ONNX-loading backend (speechperf.meters.onnx_files) and the silero port's numpy
reference; the plugins run them in the conformance suite (tests/test_conformance_*.py)."""

from __future__ import annotations

import numpy as np
import pytest

from speechperf.backend import TensorInfo
from speechperf.profiler import Recorded, StepProfiler

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from speechperf.meters.onnx_files import onnx_dtype, onnx_tensor_infos, tensor_info  # noqa: E402


@pytest.mark.parametrize(
    "elem_type, name",
    [
        (TensorProto.FLOAT, "float32"),
        (TensorProto.INT64, "int64"),
        (TensorProto.FLOAT16, "float16"),
        (TensorProto.BOOL, "bool"),
        (TensorProto.UINT8, "uint8"),
        # onnx.helper.tensor_dtype_to_np_dtype gives float32 for these and int8/uint8 for the int4 types
        (TensorProto.BFLOAT16, None),
        (TensorProto.FLOAT8E4M3FN, None),
        (TensorProto.FLOAT8E5M2, None),
        (TensorProto.INT4, None),
        (TensorProto.UINT4, None),
        (TensorProto.STRING, None),
    ],
)
def test_onnx_dtype_names_only_what_numpy_holds(elem_type, name):
    assert onnx_dtype(elem_type) == name


def test_tensor_infos_of_a_file_leave_out_weights_and_non_tensors(tmp_path):
    weight = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1.0, 0.0, 0.0, 1.0])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("SequenceConstruct", ["y"], ["s"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.BFLOAT16, ["batch", 2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 2]),  # a weight among the inputs (IR < 4)
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_value_info(
                "s", helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
            ),
        ],
        [weight],
    )
    path = tmp_path / "g.onnx"
    onnx.save(helper.make_model(graph), str(path))
    inputs, outputs = onnx_tensor_infos(path)
    assert inputs == (TensorInfo("x", None, ("batch", 2)),)
    assert outputs == (TensorInfo("y", "float32", None), TensorInfo("s"))
    assert tensor_info(graph.input[1]) == TensorInfo("w", "float32", (2, 2))


class OwnNamesProfiler(StepProfiler):
    """A plugin's profiler that uses the names the base class once kept its step counting under."""

    backend, source, warmup_steps = "own", "own ops", 0

    def __init__(self, options=None):
        super().__init__(options, echo=False)
        self._step_ns, self._samples, self._done, self._start = {}, "mine", "mine", None

    def _open(self, step):
        self._step_ns[step] = 0

    def _advance(self, step, num_samples):
        self._step_ns[step] = num_samples

    def _close(self):
        return Recorded(steps=tuple(self._step_ns))


def test_a_profiler_subclass_may_use_any_private_name():
    with OwnNamesProfiler("batch_range=[0,2]") as prof:
        for _ in range(3):
            prof.step(num_samples=4)
    assert prof.finished and prof.summary.steps == (0, 1)
    assert len(prof.summary.timing.step_ns) == 2 and prof._step_ns == {0: 0, 1: 4}


def test_silero_port_runs_as_its_numpy_reference():
    ort = pytest.importorskip("onnxruntime")
    from speechperf.zoo import silero_port

    weights = silero_port.random_weights(3)
    session = ort.InferenceSession(silero_port.port_model(weights).SerializeToString())
    rng = np.random.default_rng(1)
    feeds = {"input": rng.standard_normal((3, 576)).astype(np.float32), "state": np.zeros((2, 3, 128), np.float32)}
    output, state = session.run(None, feeds)
    expected = silero_port.reference(weights, **feeds)
    np.testing.assert_allclose(output, expected["output"], atol=1e-5)
    np.testing.assert_allclose(state, expected["stateN"], atol=1e-5)
    assert output.shape == (3, 1) and state.shape == (2, 3, 128)
