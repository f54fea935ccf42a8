"""The conformance suite on the torch backend, in each format it loads."""

import numpy as np
import pytest

from speechperf.backend import ModelSpec, TensorInfo
from speechperf.testing.conformance import BackendConformance

torch = pytest.importorskip("torch")

from tests.affine_torch import Affine  # noqa: E402

X = (TensorInfo("x", "float32", (None, None, None)),)
Y = (TensorInfo("y"),)


def _module(weight: np.ndarray, bias: np.ndarray) -> "Affine":
    module = Affine(*weight.shape)
    module.load_numpy(weight, bias)
    return module.eval()


class TestTorchScriptConformance(BackendConformance):
    backend_name = "torch"

    def build_affine_model(self, directory, weight, bias):
        path = directory / "affine.pt"
        torch.jit.script(_module(weight, bias)).save(str(path))
        return ModelSpec(path, inputs=X, outputs=Y)

    def test_input_names_come_from_the_file(self, backend, affine):
        import attrs

        session = backend.load(attrs.evolve(affine[0], inputs=None, outputs=None))
        assert session.input_names == ["x"]
        assert session.output_names == ["output"]

    def test_missing_entry_submodule_is_named(self, backend, affine):
        import attrs

        from speechperf.errors import ModelFileError

        with pytest.raises(ModelFileError, match="'encoder'"):
            backend.load(attrs.evolve(affine[0], entry="encoder"))


class TestTorchExportConformance(BackendConformance):
    backend_name = "torch"

    def build_affine_model(self, directory, weight, bias):
        batch, time = torch.export.Dim("batch", min=1), torch.export.Dim("time", min=1)
        example = (torch.zeros(2, 3, weight.shape[0]),)
        program = torch.export.export(_module(weight, bias), example, dynamic_shapes={"x": {0: batch, 1: time}})
        path = directory / "affine.pt2"
        torch.export.save(program, str(path))
        return ModelSpec(path, outputs=Y)

    def test_dtype_and_dynamic_axes_come_from_the_program(self, session):
        info = session.inputs[0]
        assert info.dtype == "float32"
        assert isinstance(info.shape[0], str) and isinstance(info.shape[1], str) and info.shape[2] == 8


class TestTorchModuleConformance(BackendConformance):
    """An nn.Module factory plus weights, loaded with weights_only=True."""

    backend_name = "torch"

    def build_affine_model(self, directory, weight, bias):
        path = directory / "affine_weights.pt"
        torch.save(_module(weight, bias).state_dict(), str(path))
        return ModelSpec(
            factory="tests.affine_torch:Affine",
            factory_kwargs={"n_in": weight.shape[0], "n_out": weight.shape[1]},
            weights=path,
            inputs=X,
            outputs=Y,
        )

    def test_pickled_code_in_weights_is_refused(self, backend, affine, tmp_path):
        import attrs

        from speechperf.errors import ModelFileError

        class Evil:
            def __reduce__(self):
                return (print, ("pwned",))

        path = tmp_path / "evil.pt"
        torch.save({"weight": Evil()}, str(path))
        with pytest.raises(ModelFileError, match="evil.pt"):
            backend.load(attrs.evolve(affine[0], weights=path))
