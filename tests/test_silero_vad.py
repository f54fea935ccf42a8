"""The real silero VAD on torch (TorchScript), onnxruntime (ONNX) and paddle (a port fed the TorchScript weights).

All three run through the Session interface, frame by frame, on real synthesized speech (tests/data/README.md
says how speech_16k.wav was made and where its sentences and its silence lie).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speechperf.adapters.vad import (
    CHUNK,
    CONTEXT,
    FRAME_SECONDS,
    SileroStream,
    SpeechSegment,
    chunks,
    silero_model_spec,
    speech_probabilities,
    speech_segments,
)
from speechperf.backend import ModelSpec, Session, TensorInfo
from speechperf.errors import FeedError, ModelFileError, SpeechperfError
from speechperf.registry import get_backend

WAV = Path(__file__).parent / "data" / "speech_16k.wav"
BACKENDS = ("torch", "onnxruntime", "paddle")
# Where the file has speech and silence, in seconds (from sox's silence detection; tests/data/README.md). The
# spans are trimmed by 0.15-0.2 s at each edge: the model needs a few frames to rise and to fall.
INSIDE_SPEECH = ((0.2, 1.15), (2.5, 3.5))
INSIDE_SILENCE = (1.5, 2.25)
SPEECH_STARTS = (0.04, 2.31)

needs_models = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "paddle", "onnxruntime", "silero_vad")),
    reason="needs torch, paddlepaddle, onnxruntime and silero-vad",
)


@pytest.fixture(scope="module")
def audio() -> np.ndarray:
    samples, rate = sf.read(WAV, dtype="float32")
    assert rate == 16000 and samples.ndim == 1
    return samples


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("silero")


@pytest.fixture(scope="module")
def probabilities(audio, workdir) -> dict[str, np.ndarray]:
    result = {}
    for name in BACKENDS:
        session = get_backend(name).load(silero_model_spec(name, workdir))
        result[name] = speech_probabilities(session, audio)
    # the core's ONNX port (silero_vad_port = "onnx"), written from the TorchScript weights, run on onnxruntime
    port = get_backend("onnxruntime").load(silero_model_spec(OnnxPortBackend(), workdir))
    result["onnx port"] = speech_probabilities(port, audio)
    return result


class OnnxPortBackend:
    """A backend that loads ONNX but not silero's own file: it asks for the core's ONNX port."""

    name = "onnx-port"
    silero_vad_port = "onnx"


def _frames_within(start: float, end: float, count: int) -> np.ndarray:
    first, last = int(np.ceil(start / FRAME_SECONDS)), int(end / FRAME_SECONDS) - 1
    return np.arange(first, min(last, count - 1) + 1)


@pytest.mark.slow
@needs_models
def test_probabilities_agree_across_backends(probabilities, audio):
    frames = -(-audio.size // CHUNK)
    for name, p in probabilities.items():
        assert p.shape == (frames,), name
    names = list(probabilities)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            diff = np.abs(probabilities[a] - probabilities[b]).max()
            assert diff <= 1e-4, f"{a} vs {b}: max abs difference {diff:.2e}"


@pytest.mark.slow
@needs_models
def test_onnx_port_counts_the_flops_and_weights_of_the_wheels_file(probabilities, workdir):
    from speechperf.meters.onnx_flops import count_onnx_flops, onnx_weight_bytes

    port, wheel = silero_model_spec(OnnxPortBackend(), workdir).path, silero_model_spec("onnxruntime", workdir).path
    feeds = {"input": np.zeros((1, CONTEXT + CHUNK), np.float32), "state": np.zeros((2, 1, 128), np.float32)}
    with_sr = {**feeds, "sr": np.array(16000, np.int64)}
    assert count_onnx_flops(port, feeds).by_kind == count_onnx_flops(wheel, with_sr).by_kind
    assert onnx_weight_bytes(port, feeds) > 0


@pytest.mark.slow
@needs_models
def test_stream_matches_silero_own_streaming(probabilities, audio, workdir):
    """silero's top-level TorchScript forward keeps context and state itself; the adapter must do what it does."""
    import torch

    model = torch.jit.load(str(silero_model_spec("torch", workdir).path))
    model.reset_states()
    with torch.inference_mode():
        own = np.array([model(torch.from_numpy(c.copy()[None, :]), 16000).item() for c in chunks(audio)])
    np.testing.assert_allclose(probabilities["torch"], own, rtol=0, atol=1e-6)


@pytest.mark.slow
@needs_models
def test_probabilities_follow_the_speech(probabilities):
    for name, p in probabilities.items():
        for start, end in INSIDE_SPEECH:
            inside = p[_frames_within(start, end, p.size)]
            assert (inside > 0.5).mean() >= 0.8, f"{name}: speech {start}-{end} s: {np.round(inside, 2)}"
        silence = p[_frames_within(*INSIDE_SILENCE, p.size)]
        assert silence.size >= 20 and (silence < 0.5).all(), f"{name}: silence: {np.round(silence, 2)}"


@pytest.mark.slow
@needs_models
def test_segments_of_real_speech(probabilities):
    segments = speech_segments(probabilities["onnxruntime"])
    assert len(segments) == 2, segments
    for segment, onset in zip(segments, SPEECH_STARTS):
        assert abs(segment.start - onset) <= 0.15, segments
    assert segments[0].end < INSIDE_SILENCE[0] and segments[1].start > INSIDE_SILENCE[1], segments


@needs_models
def test_exported_weights_are_the_torchscript_state_dict(workdir):
    import torch
    from safetensors.numpy import load_file

    spec = silero_model_spec("paddle", workdir)
    model = torch.jit.load(str(silero_model_spec("torch", workdir).path))._model
    arrays = load_file(str(spec.weights))
    state = model.state_dict()
    assert set(arrays) == set(state)
    for name, value in state.items():
        np.testing.assert_array_equal(arrays[name], value.numpy(), err_msg=name)


@needs_models
def test_export_weights_reports_bad_files(tmp_path):
    torch_backend = get_backend("torch")
    with pytest.raises(ModelFileError, match="model file not found: .*absent.jit"):
        torch_backend.export_weights(ModelSpec(path=tmp_path / "absent.jit"), tmp_path / "w.safetensors")
    (tmp_path / "bad.jit").write_bytes(b"not torchscript")
    with pytest.raises(ModelFileError, match="cannot load .*bad.jit as TorchScript"):
        torch_backend.export_weights(ModelSpec(path=tmp_path / "bad.jit"), tmp_path / "w.safetensors")
    jit = silero_model_spec("torch", tmp_path)
    with pytest.raises(ModelFileError, match=r"weights output .*w.npz has suffix '.npz'; allowed: .safetensors"):
        torch_backend.export_weights(ModelSpec(path=jit.path, entry="_model"), tmp_path / "w.npz")
    with pytest.raises(ModelFileError, match="has no submodule '_modle'"):
        torch_backend.export_weights(ModelSpec(path=jit.path, entry="_modle"), tmp_path / "w.safetensors")


@needs_models
def test_paddle_port_reports_missing_or_unreadable_weights(workdir, tmp_path):
    spec = silero_model_spec("paddle", workdir)
    missing = ModelSpec(factory=spec.factory, weights=tmp_path / "nope.safetensors", inputs=spec.inputs)
    with pytest.raises(ModelFileError, match="weights file not found: .*nope.safetensors"):
        get_backend("paddle").load(missing)
    (tmp_path / "garbage.safetensors").write_bytes(b"not a safetensors file")
    garbage = ModelSpec(factory=spec.factory, weights=tmp_path / "garbage.safetensors", inputs=spec.inputs)
    with pytest.raises(ModelFileError, match="cannot read weights .*garbage.safetensors"):
        get_backend("paddle").load(garbage)


@needs_models
def test_paddle_port_rejects_weights_of_another_model(workdir, tmp_path):
    from safetensors.numpy import load_file, save_file

    spec = silero_model_spec("paddle", workdir)
    arrays = load_file(str(spec.weights))
    renamed = dict(arrays)
    renamed["decoder.rnn.weight_x"] = renamed.pop("decoder.rnn.weight_ih")
    save_file(renamed, str(tmp_path / "renamed.safetensors"))
    with pytest.raises(ModelFileError, match=r"do not fit SileroVAD16k: missing \['decoder.rnn.weight_ih'\]"):
        get_backend("paddle").load(ModelSpec(factory=spec.factory, weights=tmp_path / "renamed.safetensors"))
    reshaped = dict(arrays)
    reshaped["encoder.0.reparam_conv.weight"] = np.zeros((128, 129, 5), dtype=np.float32)
    save_file(reshaped, str(tmp_path / "reshaped.safetensors"))
    with pytest.raises(ModelFileError, match=r"encoder.0.reparam_conv.weight has shape \(128, 129, 5\)"):
        get_backend("paddle").load(ModelSpec(factory=spec.factory, weights=tmp_path / "reshaped.safetensors"))


class RecordingSession(Session):
    """A stand-in model: returns the mean of the new samples as the probability and state + 1 as the new state."""

    backend = "fake"

    def __init__(self, with_sr: bool):
        infos = [
            TensorInfo("input", "float32", (None, CONTEXT + CHUNK)),
            TensorInfo("state", "float32", (2, None, 128)),
        ]
        if with_sr:
            infos.append(TensorInfo("sr", "int64", ()))
        self.inputs, self.outputs = tuple(infos), (TensorInfo("output"), TensorInfo("stateN"))
        self.calls: list[dict[str, np.ndarray]] = []

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls.append({k: v.copy() for k, v in feeds.items()})
        return {"output": feeds["input"][:, CONTEXT:].mean(axis=1, keepdims=True), "stateN": feeds["state"] + 1}


@pytest.mark.parametrize("with_sr", [False, True])
def test_stream_carries_context_and_state(with_sr):
    audio = np.arange(CHUNK * 2 + 100, dtype=np.float32) / 10_000
    session = RecordingSession(with_sr)
    probs = speech_probabilities(session, audio)
    assert len(session.calls) == 3
    padded = np.concatenate([audio, np.zeros(3 * CHUNK - audio.size, dtype=np.float32)])
    for k, call in enumerate(session.calls):
        context = np.zeros(CONTEXT, np.float32) if k == 0 else padded[k * CHUNK - CONTEXT : k * CHUNK]
        np.testing.assert_array_equal(call["input"][0], np.concatenate([context, padded[k * CHUNK : (k + 1) * CHUNK]]))
        np.testing.assert_array_equal(call["state"], np.full((2, 1, 128), k, dtype=np.float32))
        assert ("sr" in call) == with_sr and (not with_sr or call["sr"] == 16000)
    np.testing.assert_allclose(probs, padded.reshape(3, CHUNK).mean(axis=1), rtol=1e-6)


def test_stream_needs_the_silero_inputs():
    session = RecordingSession(False)
    session.inputs = (TensorInfo("x"),)
    with pytest.raises(SpeechperfError, match=r"lacks the silero input\(s\) \['input', 'state'\]"):
        SileroStream(session)


def test_stream_feeds_are_checked_by_the_session():
    with pytest.raises(FeedError, match="input 'input' has dtype float64"):
        SileroStream(RecordingSession(False)).step(np.zeros(CHUNK, dtype=np.float64))


@pytest.mark.parametrize(
    "audio, rate, message",
    [
        (np.zeros((2, 600), np.float32), 16000, r"audio has shape \(2, 600\); the VAD takes mono audio"),
        (np.zeros(600, np.int16), 16000, "audio has dtype int16; the VAD takes float samples"),
        (np.zeros(0, np.float32), 16000, "audio is empty"),
        (np.zeros(600, np.float32), 8000, "sample rate 8000 Hz is not taken .* allowed: 16000"),
    ],
)
def test_bad_audio_is_rejected(audio, rate, message):
    with pytest.raises(SpeechperfError, match=message):
        chunks(audio, rate)


def test_silero_file_is_picked_by_the_format_a_backend_loads(tmp_path):
    from speechperf.backend import BackendBase, Capabilities

    class OnnxToo(BackendBase):
        name = "onnx-too"
        capabilities = Capabilities(formats=("openvino-ir", "onnx"))

    class IrOnly(BackendBase):
        name = "ir-only"
        capabilities = Capabilities(formats=("openvino-ir",))

    spec = silero_model_spec(OnnxToo(), tmp_path)
    assert spec.format == "onnx" and spec.path.name == "silero_vad.onnx"
    assert silero_model_spec("torch", tmp_path).path.name == "silero_vad.jit"
    message = "no silero VAD model for backend 'ir-only': it loads openvino-ir; the silero files are torchscript, onnx"
    with pytest.raises(SpeechperfError, match=message):
        silero_model_spec(IrOnly(), tmp_path)


def _probs(pattern: str) -> np.ndarray:
    """'#' = 0.9 (speech), '-' = 0.4 (between the two thresholds), '.' = 0.1 (silence); one char per frame."""
    return np.array([{"#": 0.9, "-": 0.4, ".": 0.1}[c] for c in pattern])


def test_segments_bridge_short_silences_and_drop_short_speech():
    frame = 0.1  # seconds, to make the arithmetic readable
    probs = _probs("..####.###....##....#####")
    segments = speech_segments(probs, min_speech_s=0.3, min_silence_s=0.3, frame_s=frame)
    # The 1-frame gap is bridged; the 2-frame blip is too short; the last segment ends with the audio.
    assert segments == [SpeechSegment(0.2, pytest.approx(1.0)), SpeechSegment(pytest.approx(2.0), pytest.approx(2.5))]


def test_segments_use_hysteresis():
    # Between the thresholds (0.4 with threshold 0.5) neither starts nor ends speech.
    probs = _probs("--####------##......")
    assert speech_segments(probs, min_speech_s=0.1, min_silence_s=0.3, frame_s=0.1) == [
        SpeechSegment(0.2, pytest.approx(1.4))
    ]
    assert speech_segments(_probs("--------"), frame_s=0.1) == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"threshold": 1.0}, "threshold 1.0 is out of range"),
        ({"min_speech_s": -1}, "min_speech_s -1 is negative"),
        ({"frame_s": 0}, "frame_s 0 must be > 0"),
    ],
)
def test_segments_reject_bad_settings(kwargs, message):
    with pytest.raises(SpeechperfError, match=message):
        speech_segments(np.zeros(4), **kwargs)
