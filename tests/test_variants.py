"""Each backend's declared variants (speechperf.backend.variants): they are well formed, each loads the tiny zoo
S2T encoder on its real framework and matches that backend's eager outputs, and the switches they set reach the
framework (paddle's oneDNN and IR passes in its Config, ORT's spinning in its session options)."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

from speechperf.backend import Variant, check_options, hooks
from speechperf.errors import ModelFileError
from speechperf.registry import known_backends, require_backend
from speechperf.zoo.build import ensure_built, model_spec, zoo_formats
from speechperf.zoo.catalog import get_model

BACKENDS = ("torch", "paddle", "onnxruntime")
#: The variant each backend's others are checked against: its eager path (ORT: no graph optimisation).
EAGER = {"torch": "eager", "paddle": "eager", "onnxruntime": "disable"}
#: Variants left out of the zoo load test, and why: max-autotune benchmarks every GEMM choice while it compiles
#: and AOTInductor compiles the whole encoder ahead of time (minutes each on a shared machine); the default
#: compile mode goes through the same code, and AOTInductor is tested on a small model below.
SLOW = {"compile-max-autotune", "aot-inductor"}


def _variants(name: str) -> dict[str, Variant]:
    return {v.name: v for v in hooks(require_backend(name)).variants()}


@pytest.mark.parametrize("name", BACKENDS)
def test_variants_are_unique_with_valid_options_and_formats_the_backend_runs(name):
    backend = require_backend(name)
    declared = hooks(backend).variants()
    assert len({v.name for v in declared}) == len(declared) >= 4
    runnable = {fmt for fmt, (owner, zf) in zoo_formats().items() if zf.format in backend.capabilities.formats}
    for variant in declared:
        assert check_options(backend, variant.options_dict) == variant.options_dict  # every key known and valid
        assert variant.format in runnable, (variant, runnable)
    assert name in known_backends()


@pytest.fixture(scope="module")
def s2t_tiny():
    formats = sorted({v.format for b in BACKENDS for v in _variants(b).values()})
    folder = ensure_built("s2t", "tiny", formats=formats)
    feeds = get_model("s2t").example_feeds("encoder", "tiny", 1, 120, np.random.default_rng(0))
    return folder, feeds


def _run(name: str, variant: Variant, s2t_tiny) -> dict[str, np.ndarray]:
    folder, feeds = s2t_tiny
    backend = require_backend(name)
    backend.set_threads(1)
    spec = attrs.evolve(model_spec(folder, "encoder", variant.format), options=variant.options_dict)
    session = backend.load(spec, device="cpu", threads=1)
    session(feeds)  # a compiled variant compiles here
    return session(feeds)


@pytest.mark.parametrize(
    "name, variant",
    [
        # torch.compile's first compile takes about a minute here; compile-frozen then reuses its kernels
        pytest.param(b, v, marks=pytest.mark.slow) if v.startswith("compile") else (b, v)
        for b in BACKENDS
        for v in _variants(b)
        if v not in SLOW and v != EAGER[b]
    ],
)
def test_each_variant_loads_and_matches_the_eager_outputs(name, variant, s2t_tiny):
    declared = _variants(name)
    reference = _run(name, declared[EAGER[name]], s2t_tiny)
    got = _run(name, declared[variant], s2t_tiny)
    assert list(got) == list(reference)
    differs = []
    for key, value in reference.items():
        assert got[key].shape == value.shape
        if declared[variant].precision == "bf16":  # 8 bits of mantissa: within 2% of the output's scale
            worst = float(np.max(np.abs(got[key] - value)) / np.max(np.abs(value)))
            assert worst < 0.02, f"{name} {variant} {key}: max |diff| / max |eager| = {worst:.3g}"
            differs.append(worst > 0)
            continue
        np.testing.assert_allclose(got[key], value, rtol=1e-3, atol=2e-4, err_msg=f"{name} {variant} {key}")
    if declared[variant].precision == "bf16":
        assert any(differs), f"{name} {variant}: the outputs equal fp32's exactly; bf16 did not run"
    if declared[variant].options_dict.get("compile", "off") != "off":  # Inductor's kernels land in our cache
        from speechperf.cache import cache_dir

        assert any((cache_dir() / "torchinductor").iterdir())


def test_compile_on_a_torchscript_file_is_one_line_naming_the_formats_it_applies_to(s2t_tiny):
    folder, _ = s2t_tiny
    spec = attrs.evolve(model_spec(folder, "encoder", "torchscript"), options={"compile": "default"})
    with pytest.raises(ModelFileError, match="applies to the module and export formats"):
        require_backend("torch").load(spec, device="cpu", threads=1)


@pytest.mark.parametrize("mkldnn", [True, False])
@pytest.mark.parametrize("ir_optim", [True, False])
def test_paddle_sets_onednn_and_ir_passes_explicitly_both_ways(mkldnn, ir_optim, s2t_tiny):
    require_backend("paddle")
    from paddle import inference

    from speechperf.backends.paddle.session import predictor_switches

    folder, _ = s2t_tiny
    path = model_spec(folder, "encoder", "paddle-inference").path
    config = inference.Config(str(path), str(path.with_suffix(".pdiparams")))
    config.disable_gpu()
    # A fresh Config already says oneDNN is on (paddle 3.3.1), which is why "off" must be said, not left out.
    predictor_switches(config, {"mkldnn": mkldnn, "ir_optim": ir_optim}, "cpu")
    assert config.mkldnn_enabled() is mkldnn
    assert config.ir_optim() is ir_optim


@pytest.mark.parametrize("spinning, entry", [(True, "1"), (False, "0")])
def test_onnxruntime_intra_op_spinning_reaches_the_session_options(spinning, entry, s2t_tiny):
    require_backend("onnxruntime")
    from speechperf.backends.onnxruntime.session import session_options

    folder, _ = s2t_tiny
    spec = attrs.evolve(model_spec(folder, "encoder", "onnx-torch"), options={"intra_op_spinning": spinning})
    assert session_options(spec, 1).get_session_config_entry("session.intra_op.allow_spinning") == entry


def test_paddle_silero_vad_through_the_predictor_matches_the_eager_port(tmp_path):
    from speechperf.adapters.vad import silero_model_spec
    from speechperf.cache import cache_dir

    backend = require_backend("paddle")
    backend.set_threads(1)
    spec = silero_model_spec(backend, cache_dir())
    eager = backend.load(spec, device="cpu", threads=1)
    predictor = backend.load(attrs.evolve(spec, options={"layer_api": "predictor"}), device="cpu", threads=1)
    assert type(eager).__name__ == "LayerSession" and type(predictor).__name__ == "PredictorSession"
    exported = sorted((cache_dir() / "paddle_predictor").glob("*/model.json"))
    assert exported  # exported once into the cache; a second load finds it there
    before = [p.stat().st_mtime_ns for p in exported]
    backend.load(attrs.evolve(spec, options={"layer_api": "predictor"}), device="cpu", threads=1)
    assert [p.stat().st_mtime_ns for p in exported] == before
    rng = np.random.default_rng(0)
    states = {"eager": np.zeros((2, 1, 128), np.float32), "predictor": np.zeros((2, 1, 128), np.float32)}
    for _ in range(6):  # a stream: each window's state feeds the next, as the VAD adapter carries it
        window = (0.1 * rng.standard_normal((1, 576))).astype(np.float32)
        got = {}
        for name, session in (("eager", eager), ("predictor", predictor)):
            got[name] = session({"input": window, "state": states[name]})
            states[name] = got[name]["stateN"]
        np.testing.assert_allclose(got["predictor"]["output"], got["eager"]["output"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(states["predictor"], states["eager"], rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # AOTInductor compiles even this small model for about a minute on a shared 2-core machine
def test_aot_inductor_compiles_on_the_first_call_matches_eager_and_is_cached(tmp_path):
    from safetensors.numpy import save_file

    from speechperf.backend import ModelSpec, TensorInfo
    from speechperf.cache import cache_dir

    rng = np.random.default_rng(0)
    weights = tmp_path / "affine.safetensors"
    save_file({"weight": rng.standard_normal((8, 4)).astype(np.float32), "bias": np.ones(4, np.float32)}, weights)
    backend = require_backend("torch")
    spec = ModelSpec(
        factory="tests.affine_torch:Affine",
        factory_kwargs={"n_in": 8, "n_out": 4},
        weights=weights,
        inputs=(TensorInfo("x", "float32", ("batch", 8)),),
        outputs=(TensorInfo("y"),),
    )
    eager = backend.load(spec, device="cpu", threads=1)
    aot = backend.load(attrs.evolve(spec, options={"compile": "aot-inductor"}), device="cpu", threads=1)
    for batch in (1, 3, 5):  # compiled on the first (batch 1), every axis dynamic: later batches run it too
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        np.testing.assert_allclose(aot({"x": x})["y"], eager({"x": x})["y"], rtol=1e-5, atol=1e-6)
    packages = sorted((cache_dir() / "torch_aoti").glob("*/model.pt2"))
    assert packages
    stamps = [p.stat().st_mtime_ns for p in packages]
    again = backend.load(attrs.evolve(spec, options={"compile": "aot-inductor"}), device="cpu", threads=1)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(again({"x": x})["y"], eager({"x": x})["y"], rtol=1e-5, atol=1e-6)
    assert [p.stat().st_mtime_ns for p in packages] == stamps  # loaded from the cache, not compiled again


@pytest.mark.parametrize("mode", ["off", "default", "aot-inductor"])
def test_a_factory_without_declared_inputs_is_fed_by_its_forward_parameters_compiled_or_not(mode):
    """Read from the module before it is compiled: a torch.compile'd module's forward is (*args, **kwargs), and an
    AOTInductor one has no forward (both compile on the first call, so loading compiles nothing)."""
    from speechperf.backend import ModelSpec

    spec = ModelSpec(
        factory="tests.affine_torch:Affine", factory_kwargs={"n_in": 8, "n_out": 4}, options={"compile": mode}
    )
    session = require_backend("torch").load(spec, device="cpu", threads=1)
    assert [t.name for t in session.inputs] == ["x"]


def test_an_empty_kernel_left_by_a_killed_compile_is_dropped_from_the_inductor_cache(tmp_path):
    require_backend("torch")
    from speechperf.backends.torch.session import drop_truncated_kernels

    (tmp_path / "c7").mkdir()
    empty, whole = tmp_path / "c7" / "k.main.so", tmp_path / "c7" / "j.main.so"
    empty.write_bytes(b"")
    whole.write_bytes(b"\x7fELF")
    assert drop_truncated_kernels(tmp_path) == [empty]
    assert not empty.exists() and whole.exists()


def test_inductor_follows_the_speechperf_cache_unless_the_user_chose_a_folder(tmp_path):
    require_backend("torch")
    from speechperf.backends.torch.session import inductor_cache_dir

    # Inductor wrote its own default on an earlier use in this process: ours replaces it
    environ = {"TORCHINDUCTOR_CACHE_DIR": "/tmp/torchinductor_root"}
    assert inductor_cache_dir(environ, tmp_path / "a", user="") == tmp_path / "a"
    assert inductor_cache_dir(environ, tmp_path / "b", user="") == tmp_path / "b"  # the cache folder moved
    assert environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "b")
    # a folder the user set before starting is kept
    assert inductor_cache_dir(environ, tmp_path / "c", user="/data/inductor") == Path("/data/inductor")
