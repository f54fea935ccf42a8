"""Each quantization method on each backend, on a real reference model: the int8 file loads through the backend,
is smaller than its fp32 file, and its outputs stay close to fp32 at lengths and a batch size calibration never saw.

Bounds (``BOUNDS``): max |int8 - fp32| relative to max |fp32| per output, on the tiny S2T encoder with feeds of
random unit-variance features. Measured here (4 feeds each): ort-dynamic 0.008-0.011, legacy-dynamic 0.016-0.021,
pt2e-static 0.011-0.021, torchao-dynamic ~0.005, ort-static-qdq 0.069-0.128 (its activation ranges are fixed
from 4 calibration feeds and the checked feeds are other random draws whose values fall outside them and clip;
on real speech, calibrated and checked on different clips of one dataset, it gives 0.027). The bounds leave about
2x headroom above the worst measured and still fail a broken quantization (wrong scales or a lost axis give errors
of the output's own size, ~1).
"""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from speechperf.backend import ModelSpec
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.optimize.hook import QuantizationError, QuantizeSource
from speechperf.registry import get_backend
from speechperf.zoo.build import ensure_built, model_spec
from speechperf.zoo.catalog import get_model

BOUNDS = {
    "ort-dynamic": 0.05,
    "legacy-dynamic": 0.05,
    "pt2e-static": 0.05,
    "torchao-dynamic": 0.05,
    "ort-static-qdq": 0.25,
    "paddle-ptq": 0.25,
}
MODEL = get_model("s2t")


@pytest.fixture(scope="module")
def folder():
    return ensure_built("s2t", "tiny")


def feeds(component: str, count: int, seed: int = 0) -> list[dict]:
    comp = MODEL.component(component)
    rng = np.random.default_rng(seed)
    return [MODEL.example_feeds(component, "tiny", 1, comp.test_lengths[i % 3], rng) for i in range(count)]


def source(folder, component: str, formats: tuple[str, ...]) -> QuantizeSource:
    comp = MODEL.component(component)
    specs = tuple(model_spec(folder, component, f) for f in formats)
    return QuantizeSource(
        component,
        specs,
        tuple(feeds(component, 4)),
        MODEL.example_feeds(component, "tiny", 2, comp.test_lengths[1], np.random.default_rng(9)),
        comp.dynamic_axes(),
    )


def rel_diff(a: dict, b: dict) -> float:
    worst = 0.0
    for name, ref in a.items():
        if np.issubdtype(ref.dtype, np.floating):
            worst = max(worst, float(np.abs(b[name] - ref).max() / max(np.abs(ref).max(), 1e-12)))
        else:
            np.testing.assert_array_equal(b[name], ref)
    return worst


CASES = [  # backend, method, the formats at hand, the fp32 file of the same kind as the int8 one
    ("onnxruntime", "ort-dynamic", ("onnx-torch",), "onnx-torch"),
    ("onnxruntime", "ort-static-qdq", ("onnx-torch",), "onnx-torch"),
    ("torch", "legacy-dynamic", ("torch-eager",), "torchscript"),
    ("torch", "pt2e-static", ("torch-eager",), None),
    ("torch", "torchao-dynamic", ("torch-eager",), None),
]


@pytest.mark.slow
@pytest.mark.parametrize("backend_name,method,formats,size_of", CASES, ids=[c[1] for c in CASES])
def test_method_writes_a_smaller_model_that_loads_and_stays_close(
    backend_name, method, formats, size_of, folder, tmp_path
):
    backend = get_backend(backend_name)
    component = "encoder"
    quantized = backend.quantize(method, source(folder, component, formats), tmp_path)
    comp = MODEL.component(component)
    int8 = backend.load(ModelSpec(path=quantized.path, inputs=comp.inputs, outputs=comp.outputs), threads=1)
    fp32 = backend.load(model_spec(folder, component, formats[0]), threads=1)
    # Lengths and a batch the calibration never saw: the dynamic axes survived the quantization.
    for check in feeds(component, 3, seed=5) + [
        MODEL.example_feeds(component, "tiny", 3, 50, np.random.default_rng(7))
    ]:
        assert rel_diff(fp32(check), int8(check)) < BOUNDS[method]
    if quantized.path.suffix == ".pt2":
        # The tiny model's weights (~0.2 MB) weigh less than a program's own graph (~0.8 MB of JSON), so the file
        # of a torch.export program is compared by the tensors it stores, with the fp32 program of the same module.
        assert tensor_bytes(quantized.path) < 0.6 * tensor_bytes(fp32_program(folder, component, tmp_path))
    else:
        assert quantized.path.stat().st_size < model_spec(folder, component, size_of).path.stat().st_size


def tensor_bytes(path) -> int:
    with zipfile.ZipFile(path) as archive:
        return sum(
            i.file_size
            for i in archive.infolist()
            if "/data/weights/weight_" in i.filename
            or "/data/constants/" in i.filename
            and not i.filename.endswith(".json")
        )


def fp32_program(folder, component: str, tmp_path):
    """The fp32 component exported and pruned exactly as the torch hook exports its int8 programs."""
    import torch

    from speechperf.backends.torch.quantize import _export

    src = source(folder, component, ("torch-eager",))
    module = get_backend("torch").load(src.specs[0]).module
    path = tmp_path / "fp32.pt2"
    torch.export.save(_export(module, src.specs[0], src), str(path))
    return path


@pytest.mark.slow
def test_paddle_ptq_reports_what_paddle_does_with_the_saved_program(folder, tmp_path):
    """paddle 3.3.1: the PTQ-converted layer is close to fp32 but its saved inference program is not; the hook
    says so in one line instead of handing over a wrong model."""
    backend = get_backend("paddle")
    src = source(folder, "encoder", ("paddle-inference", "paddle-eager"))
    try:
        quantized = backend.quantize("paddle-ptq", src, tmp_path)
    except QuantizationError as exc:
        message = str(exc)
        assert "\n" not in message
        assert "disagrees with the converted layer" in message and "paddle 3.3.1" in message
        return
    # A paddle that saves it correctly: the program loads with oneDNN int8 and stays close at its fixed shape.
    comp = MODEL.component("encoder")
    int8 = backend.load(ModelSpec(path=quantized.path, inputs=comp.inputs, options=quantized.options), threads=1)
    fp32 = backend.load(model_spec(folder, "encoder", "paddle-inference"), threads=1)
    assert rel_diff(fp32(src.calibration[0]), int8(src.calibration[0])) < BOUNDS["paddle-ptq"]


@pytest.mark.slow
def test_a_method_the_backend_lacks_is_one_line_listing_its_methods(folder, tmp_path):
    with pytest.raises(SpeechperfError) as info:
        get_backend("onnxruntime").quantize("pt2e-static", source(folder, "encoder", ("onnx-torch",)), tmp_path)
    assert str(info.value) == (
        "unknown quantization method 'pt2e-static' for backend 'onnxruntime'; its methods: ort-dynamic, ort-static-qdq"
    )


def test_a_format_the_method_cannot_read_is_named(folder, tmp_path):
    with pytest.raises(QuantizationError, match="reads a model in format module; encoder is at hand in: torchscript"):
        get_backend("torch").quantize("torchao-dynamic", source(folder, "encoder", ("torchscript",)), tmp_path)


@pytest.mark.slow
def test_a_pt2_with_pickled_tensors_is_refused(folder, tmp_path):
    """torchao's quantized weights are tensor subclasses, which torch.export.save pickles; the hook unwraps them,
    and the loader refuses a file where that was not done instead of unpickling it."""
    import copy
    import warnings

    import torch
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    module = copy.deepcopy(get_backend("torch").load(model_spec(folder, "encoder", "torch-eager")).module)
    quantize_(module, Int8DynamicActivationInt8WeightConfig())
    args = tuple(torch.from_numpy(v) for v in feeds("encoder", 1)[0].values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = tmp_path / "pickled.pt2"
        torch.export.save(torch.export.export(module, args), str(path))
    with pytest.raises(ModelFileError, match="pickled .* never does"):
        get_backend("torch").load(ModelSpec(path=path))


@pytest.mark.slow
def test_fp32_export_is_the_fp32_model_in_the_int8_container(folder, tmp_path):
    """The reference row for the torch.export methods: no quantization, the same outputs as the eager module."""
    backend = get_backend("torch")
    quantized = backend.quantize("fp32-export", source(folder, "decoder_step", ("torch-eager",)), tmp_path)
    comp = MODEL.component("decoder_step")
    exported = backend.load(ModelSpec(path=quantized.path, inputs=comp.inputs, outputs=comp.outputs))
    eager = backend.load(model_spec(folder, "decoder_step", "torch-eager"))
    for check in feeds("decoder_step", 3, seed=3):
        assert rel_diff(eager(check), exported(check)) < 1e-5


def test_u8s8_saturation_is_expected_only_on_x86_without_vnni():
    from speechperf.backends.onnxruntime.quantize import u8s8_saturates

    assert u8s8_saturates(("avx2", "fma"), "x86_64")
    assert u8s8_saturates(("avx2", "avx512f"), "AMD64")
    assert not u8s8_saturates(("avx2", "avx512_vnni"), "x86_64")
    assert not u8s8_saturates(("avx2", "avx_vnni"), "x86_64")
    assert not u8s8_saturates((), "aarch64")


@pytest.mark.slow
def test_ort_dynamic_without_vnni_stores_7_bit_weights_says_so_and_stays_close(folder, tmp_path, monkeypatch):
    """The branch a CPU without VNNI takes, forced here on any CPU: 7-bit weights, named in the method's note."""
    import onnx
    from onnx import numpy_helper

    from speechperf.backends.onnxruntime import quantize as ort_quantize

    monkeypatch.setattr(ort_quantize, "u8s8_saturates", lambda: True)
    backend = get_backend("onnxruntime")
    quantized = backend.quantize("ort-dynamic", source(folder, "encoder", ("onnx-torch",)), tmp_path)
    assert any("7-bit weights (reduce_range)" in n for n in quantized.notes)
    weights = [numpy_helper.to_array(t) for t in onnx.load(str(quantized.path)).graph.initializer]
    int8 = [w for w in weights if w.dtype == np.int8 and w.size > 16]
    assert int8 and max(int(np.abs(w.astype(np.int32)).max()) for w in int8) <= 64
    comp = MODEL.component("encoder")
    session = backend.load(ModelSpec(path=quantized.path, inputs=comp.inputs, outputs=comp.outputs), threads=1)
    fp32 = backend.load(model_spec(folder, "encoder", "onnx-torch"), threads=1)
    for check in feeds("encoder", 2, seed=5):
        assert rel_diff(fp32(check), session(check)) < BOUNDS["ort-dynamic"]
