"""The conformance suite on the onnxruntime backend, with the affine model written as a plain ONNX graph."""

from pathlib import Path

import numpy as np
import pytest

from speechperf.backend import ModelSpec
from speechperf.testing.conformance import BackendConformance

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def write_affine_onnx(path: Path, weight: np.ndarray, bias: np.ndarray) -> Path:
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "weight"], ["xw"]),
            helper.make_node("Add", ["xw", "bias"], ["z"]),
            helper.make_node("Tanh", ["z"], ["y"]),
        ],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", weight.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "time", weight.shape[1]])],
        initializer=[numpy_helper.from_array(weight, "weight"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


class TestOnnxRuntimeConformance(BackendConformance):
    backend_name = "onnxruntime"

    def build_affine_model(self, directory, weight, bias):
        return ModelSpec(write_affine_onnx(directory / "affine.onnx", weight, bias))

    def test_declares_dynamic_axes(self, session):
        assert session.inputs[0].shape == (None, None, 8) or session.inputs[0].shape == ("batch", "time", 8)
        assert session.inputs[0].dtype == "float32"

    def test_unknown_optimization_level(self, backend, affine):
        import attrs

        from speechperf.errors import SpeechperfError

        message = (
            "backend 'onnxruntime': options.onnxruntime.graph_optimization_level = 'max'; "
            "allowed: disable, basic, extended, all"
        )
        with pytest.raises(SpeechperfError) as bad_value:
            backend.load(attrs.evolve(affine[0], options={"graph_optimization_level": "max"}))
        assert str(bad_value.value) == message
        # The whole message, every allowed key named (pytest's match= is a prefix search: it passed on a part).
        allowed = ", ".join(field.name for field in attrs.fields(backend.options_class))
        with pytest.raises(SpeechperfError) as bad_key:
            backend.load(attrs.evolve(affine[0], options={"intra_threads": 2}))
        assert str(bad_key.value) == (
            f"backend 'onnxruntime': unknown option 'intra_threads' of backend 'onnxruntime'; allowed: {allowed}"
        )
        assert allowed.startswith("graph_optimization_level, providers, intra_op_spinning, log_severity_level")
