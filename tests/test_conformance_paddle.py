"""The conformance suite on the paddle backend: the inference predictor, paddle.jit.load, and a layer factory."""

import attrs
import numpy as np
import pytest

from speechperf.backend import ModelSpec, TensorInfo
from speechperf.testing.conformance import BackendConformance

pytest.importorskip("paddle")
from speechperf.backends.paddle import import_paddle  # noqa: E402

paddle = import_paddle()

from tests.affine_paddle import Affine  # noqa: E402

X = (TensorInfo("x", "float32", (None, None, None)),)
Y = (TensorInfo("y"),)


def _layer(weight: np.ndarray, bias: np.ndarray) -> "Affine":
    layer = Affine(*weight.shape)
    layer.set_state_dict({"weight": weight, "bias": bias})
    layer.eval()
    return layer


def save_inference_model(directory, weight, bias):
    prefix = directory / "affine"
    spec = [paddle.static.InputSpec([None, None, weight.shape[0]], "float32", "x")]
    paddle.jit.save(_layer(weight, bias), str(prefix), input_spec=spec)
    return prefix.with_suffix(".json")


class TestPaddlePredictorConformance(BackendConformance):
    backend_name = "paddle"

    def build_affine_model(self, directory, weight, bias):
        return ModelSpec(save_inference_model(directory, weight, bias), outputs=Y)

    def test_dtype_comes_from_the_model(self, session):
        assert session.inputs[0].dtype == "float32"

    def test_missing_params_file_is_named(self, backend, affine):
        affine[0].path.with_suffix(".pdiparams").unlink()
        with pytest.raises(Exception, match=r"\.pdiparams"):
            backend.load(affine[0])


class TestPaddleJitConformance(BackendConformance):
    backend_name = "paddle"

    def build_affine_model(self, directory, weight, bias):
        return ModelSpec(save_inference_model(directory, weight, bias), outputs=Y, options={"api": "jit"})

    def test_two_threads_use_two_cores(self, backend, heavy):
        """A paddle.jit.load layer uses one core whatever it is told, so asking it for two is refused, saying so."""
        from speechperf.errors import SpeechperfError

        with pytest.raises(SpeechperfError, match=r"threads=2: a model loaded with paddle.jit.load .* one CPU core"):
            backend.load(heavy[0], threads=2)


class TestPaddleLayerConformance(BackendConformance):
    """An nn.Layer factory plus framework-neutral weights (.npz, never pickle)."""

    backend_name = "paddle"

    def build_affine_model(self, directory, weight, bias):
        path = directory / "affine.npz"
        np.savez(path, weight=weight, bias=bias)
        return ModelSpec(
            factory="tests.affine_paddle:Affine",
            factory_kwargs={"n_in": weight.shape[0], "n_out": weight.shape[1]},
            weights=path,
            inputs=X,
            outputs=Y,
        )

    def test_weights_of_the_wrong_shape_are_named(self, backend, affine, tmp_path):
        from speechperf.errors import ModelFileError

        path = tmp_path / "bad.npz"
        np.savez(path, weight=np.zeros((3, 3), np.float32), bias=np.zeros(4, np.float32))
        with pytest.raises(ModelFileError, match="weight has shape"):
            backend.load(attrs.evolve(affine[0], weights=path))

    def test_pickle_weights_are_refused(self, backend, affine, tmp_path):
        from speechperf.errors import ModelFileError

        path = tmp_path / "weights.pdparams"
        path.write_bytes(b"\x80\x04not really")
        with pytest.raises(ModelFileError, match="allowed: .safetensors, .npz"):
            backend.load(attrs.evolve(affine[0], weights=path))
