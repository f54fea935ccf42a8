"""Every reference model x every format against torch eager, on the tiny zoo built once for the session.

Formats: TorchScript, paddle eager, the paddle inference predictor, ONNX from torch and ONNX from paddle (both on
onnxruntime). Tolerance: max |out - torch eager| <= model.tolerance (1e-4) * max(1, max |torch eager out|), per
output, at three lengths and batch 1 and 3. Decoded token / unit sequences must be identical across all formats.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from speechperf.adapters.decoding import generate
from speechperf.adapters.units import extract_units, load_codebook
from speechperf.errors import FeedError
from speechperf.outputs import file_sha256 as sha256
from speechperf.zoo.build import FORMATS, build_model, cache_dir, ensure_built, is_built, load_session
from speechperf.zoo.catalog import MODEL_MODULES, get_model

pytestmark = pytest.mark.slow

REFERENCE = "torch-eager"
OTHER_FORMATS = [f for f in FORMATS if f != REFERENCE]
COMPONENTS = [(m, c.name) for m in MODEL_MODULES for c in get_model(m).components]
SEQ2SEQ = [m for m in MODEL_MODULES if {"encoder", "decoder_step"} <= set(get_model(m).component_names)]


@pytest.fixture(scope="session")
def tiny_zoo():
    """The tiny zoo in the test run's shared cache (tests/conftest.py), built once for every module that needs it."""
    for model in MODEL_MODULES:
        ensure_built(model, "tiny")
    return cache_dir("tiny")


@pytest.fixture(scope="session")
def sessions(tiny_zoo):
    cache = {}

    def get(model: str, component: str, fmt: str):
        key = (model, component, fmt)
        if key not in cache:
            cache[key] = load_session(tiny_zoo / model, component, fmt, threads=1)
        return cache[key]

    return get


def _feeds(model: str, component: str, batch: int, length: int):
    return get_model(model).example_feeds(component, "tiny", batch, length, np.random.default_rng(1000 + length))


@pytest.mark.parametrize("fmt", OTHER_FORMATS)
@pytest.mark.parametrize("model, component", COMPONENTS)
def test_format_matches_torch_eager(sessions, model, component, fmt):
    ref_session, session = sessions(model, component, REFERENCE), sessions(model, component, fmt)
    comp = get_model(model).component(component)
    tolerance = get_model(model).tolerance
    for batch in (1, 3):
        for length in comp.test_lengths:
            feeds = _feeds(model, component, batch, length)
            want, got = ref_session(feeds), session(feeds)
            assert list(got) == comp.output_names
            for name in comp.output_names:
                where = f"{model}.{component}.{name} [{fmt}] batch {batch} length {length}"
                assert got[name].shape == want[name].shape, where
                assert got[name].dtype == want[name].dtype, where
                scale = max(1.0, float(np.abs(want[name]).max()))
                error = float(np.abs(got[name].astype(np.float64) - want[name]).max())
                assert error <= tolerance * scale, f"{where}: max error {error:.3g} > {tolerance} x {scale:.3g}"


@pytest.mark.parametrize("model", SEQ2SEQ)
def test_decoded_sequences_are_identical_across_formats(sessions, model):
    comp = get_model(model).component("encoder")
    lengths_name = next(t.name for t in comp.inputs if t.name.endswith("_lengths"))
    feeds = _feeds(model, "encoder", 3, comp.test_lengths[1])
    results = {}
    for fmt in FORMATS:
        encoder, step = sessions(model, "encoder", fmt), sessions(model, "decoder_step", fmt)
        results[fmt] = [
            [t.tolist() for t in generate(encoder, step, feeds, lengths_name, beam=beam, max_len_b=8)]
            for beam in (1, 3)
        ]
    greedy = results[REFERENCE][0]
    assert len(greedy) == 3 and all(len(t) <= 7 for t in greedy)  # max_len_b 8 counts the forced EOS
    for fmt, got in results.items():
        assert got == results[REFERENCE], f"{model}: {fmt} decodes {got}, torch eager {results[REFERENCE]}"


def test_units_are_identical_across_formats(sessions, tiny_zoo):
    codebook = load_codebook(tiny_zoo / "unit_extractor" / "codebook.npy")
    feeds = _feeds("unit_extractor", "encoder", 3, 8000)
    waveforms = [w[:n] for w, n in zip(feeds["waveform"], feeds["waveform_lengths"])]
    units = {
        fmt: [u.tolist() for u in extract_units(sessions("unit_extractor", "encoder", fmt), waveforms, codebook)]
        for fmt in FORMATS
    }
    assert [len(u) for u in units[REFERENCE]] == [24, 18, 12]  # 320 samples per frame, receptive field 400
    assert len({u for row in units[REFERENCE] for u in row}) > 1  # the features spread over several centroids
    for fmt, got in units.items():
        assert got == units[REFERENCE], fmt


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_wrong_feature_dimension_and_empty_input_are_named(sessions, fmt):
    session = sessions("s2t", "encoder", fmt)
    with pytest.raises(FeedError, match="input 'features' has size 40 on axis 2; expected 80"):
        session({"features": np.zeros((1, 50, 40), np.float32), "feature_lengths": np.array([50])})
    with pytest.raises(FeedError, match="input 'features' is empty"):
        session({"features": np.zeros((1, 0, 80), np.float32), "feature_lengths": np.array([0])})


def test_token_out_of_vocabulary_is_named(sessions):
    vocab = get_model("mt").hparams("tiny").vocab_size
    feeds = {"src_tokens": np.array([[5, vocab]], np.int64), "src_lengths": np.array([2])}
    enc, step = sessions("mt", "encoder", "onnx-torch"), sessions("mt", "decoder_step", "onnx-torch")
    message = f"input 'src_tokens' has token id {vocab}; the vocabulary has ids 0..{vocab - 1}"
    with pytest.raises(FeedError, match=message):
        generate(enc, step, feeds, "src_lengths", vocab_size=vocab)


@pytest.mark.parametrize("model", MODEL_MODULES)
def test_manifest_describes_the_build(tiny_zoo, model):
    folder = tiny_zoo / model
    manifest = json.loads((folder / "manifest.json").read_text())
    ref = get_model(model)
    assert manifest["model"] == model and manifest["preset"] == "tiny" and manifest["source_framework"] == "torch"
    assert manifest["definitions"] and manifest["architecture"]
    assert [c["name"] for c in manifest["components"]] == ref.component_names
    assert manifest["components"][0]["dynamic_axes"][ref.components[0].inputs[0].name]["0"] == "batch"
    from safetensors.numpy import load_file

    arrays = load_file(str(folder / "weights.safetensors"))
    params = sum(v.size for k, v in arrays.items() if k not in ref.artifacts)
    assert 0 < manifest["parameter_count"] <= params  # buffers (if any) are weights but not parameters
    formats = {f["format"] for f in manifest["files"]}
    assert {"weights", "torchscript", "onnx-torch", "paddle-inference", "onnx-paddle"} <= formats
    for entry in manifest["files"]:
        path = folder / entry["path"]
        assert sha256(path) == entry["sha256"] and path.stat().st_size == entry["bytes"]
        assert entry["bytes"] < 2_000_000, f"{entry['path']} is over the tiny budget of ~2 MB"


def test_rebuild_with_the_same_seed_gives_the_same_weights(tiny_zoo, tmp_path):
    again = build_model("s2t", "tiny", tmp_path)
    first = json.loads((tiny_zoo / "s2t" / "manifest.json").read_text())
    digest = {f["path"]: f["sha256"] for f in first["files"]}
    assert {f["path"]: f["sha256"] for f in again["files"]}["weights.safetensors"] == digest["weights.safetensors"]


def test_ensure_built_reuses_a_complete_build(tiny_zoo, monkeypatch, tmp_path):
    manifest = tiny_zoo / "mt" / "manifest.json"
    before = manifest.stat().st_mtime_ns
    assert ensure_built("mt", "tiny", root=tiny_zoo) == tiny_zoo / "mt"
    assert manifest.stat().st_mtime_ns == before
    assert not is_built(tmp_path / "mt")
    copy = tmp_path / "copy" / "mt"
    shutil.copytree(tiny_zoo / "mt", copy)
    assert is_built(copy)
    stale = json.loads((copy / "manifest.json").read_text())
    stale["seed"] += 1  # built from another seed than the catalog's: rebuild
    (copy / "manifest.json").write_text(json.dumps(stale))
    assert not is_built(copy)
    monkeypatch.setenv("SPEECHPERF_CACHE_DIR", str(tmp_path))
    assert cache_dir("base") == tmp_path / "zoo" / "base"


def test_cli_lists_built_models_and_rejects_unknown_presets(tiny_zoo):
    from click.testing import CliRunner

    from speechperf.cli import main

    result = CliRunner().invoke(main, ["zoo", "list", "--preset", "tiny", "--dir", str(tiny_zoo), "--json"])
    assert result.exit_code == 0, result.output
    listed = {m["model"]: m for m in json.loads(result.output)}
    assert set(listed) == set(MODEL_MODULES)
    assert (
        listed["s2t"]["parameter_count"]
        == json.loads((tiny_zoo / "s2t" / "manifest.json").read_text())["parameter_count"]
    )
    bad = CliRunner().invoke(main, ["zoo", "build", "--preset", "huge", "--out", str(tiny_zoo)])
    assert bad.exit_code == 2 and "'huge' is not one of 'tiny', 'base'" in bad.output
