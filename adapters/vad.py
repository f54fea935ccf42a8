"""Voice activity detection with the silero VAD (16 kHz) over any Session, and speech segments from its output.

The silero streaming protocol: audio is cut into 512-sample chunks (the last one zero-padded); each call gets the
chunk with the previous chunk's last 64 samples in front (zeros before the first) and the LSTM state the previous
call returned (zeros before the first), and returns one speech probability. Because this loop is numpy code, the
same audio is framed and the state carried identically on every backend.

The model files come from the installed ``silero-vad`` wheel; they are found without importing its package (that
would import torch). A backend loads the file whose format it loads; a backend that ports the network instead (the paddle backend: its
``silero_vad_port`` hook) gets the weights of the TorchScript file, exported into the zoo's layout once per
silero-vad version by ``speechperf.zoo.weights``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import NamedTuple

import attrs
import numpy as np

from speechperf.backend import ModelSpec, Session, TensorInfo, hooks
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.registry import get_backend
from speechperf.zoo import silero_port

#: ``silero_vad_port`` of a backend that loads ONNX but not the wheel's file: it gets the core's ONNX port.
ONNX_PORT = "onnx"

SAMPLE_RATE = 16000
CHUNK = 512
CONTEXT = 64
HIDDEN = 128
FRAME_SECONDS = CHUNK / SAMPLE_RATE

INPUTS = (TensorInfo("input", "float32", (None, CONTEXT + CHUNK)), TensorInfo("state", "float32", (2, None, HIDDEN)))
OUTPUTS = (TensorInfo("output"), TensorInfo("stateN"))


def silero_data_dir() -> Path:
    """The ``data`` folder of the installed silero-vad wheel, found without importing it."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            "the silero VAD model files come from silero-vad, which is not installed; "
            'install it with: pip install "speechperf[vad]"'
        )
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def silero_files(data: Path) -> dict[str, ModelSpec]:
    """The silero-vad wheel's 16 kHz model, per file format: TorchScript (its ``_model`` takes input and state)
    and ONNX (the file names input, state, sr -> output, stateN)."""
    return {
        "torchscript": ModelSpec(
            path=data / "silero_vad.jit", format="torchscript", entry="_model", inputs=INPUTS, outputs=OUTPUTS
        ),
        "onnx": ModelSpec(path=data / "silero_vad.onnx", format="onnx"),
    }


def silero_model_spec(backend, workdir: Path) -> ModelSpec:
    """What ``backend`` (a Backend or its name) loads to run the 16 kHz silero VAD.

    Picked by file format, in the backend's order of ``capabilities.formats``: any backend that loads ONNX or
    TorchScript runs the wheel's own file. A backend that ports the network names the factory of its port
    (``silero_vad_port``): it gets the TorchScript file's weights, exported into ``workdir`` once.
    """
    if isinstance(backend, str):
        backend = get_backend(backend)
    files = silero_files(silero_data_dir())
    port = hooks(backend).silero_vad_port
    if port is not None:
        return ported_model_spec(port, files["torchscript"], Path(workdir))
    for fmt in backend.capabilities.formats:
        if fmt in files:
            return files[fmt]
    raise SpeechperfError(
        f"no silero VAD model for backend {backend.name!r}: it loads "
        f"{', '.join(backend.capabilities.formats) or 'nothing'}; the silero files are "
        f"{', '.join(files)}"
    )


def ported_model_spec(port: str, source: ModelSpec, workdir: Path) -> ModelSpec:
    """The spec of a backend's port of the silero network over the weights of ``source``: the factory ``port``,
    or, for ``port == "onnx"``, the ONNX file of ``speechperf.zoo.silero_port`` written from those weights."""
    from importlib.metadata import PackageNotFoundError, version

    from speechperf.zoo.weights import exported_weights

    try:
        tag = version("silero-vad")
    except PackageNotFoundError:
        tag = "unknown"
    weights = exported_weights(
        attrs.evolve(source, inputs=None, outputs=None), workdir / f"silero_vad_{tag}_16k.safetensors"
    )
    if port == ONNX_PORT:  # the core writes the network as a plain ONNX graph, once per silero-vad version
        out = workdir / f"silero_vad_{tag}_16k_port{silero_port.GRAPH_VERSION}.onnx"
        if not out.is_file():
            from safetensors.numpy import load_file

            silero_port.write_port(load_file(str(weights)), out)
        return ModelSpec(path=out, format="onnx")
    return ModelSpec(factory=port, weights=weights, inputs=source.inputs, outputs=source.outputs)


def _check_audio(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    if sample_rate != SAMPLE_RATE:
        raise SpeechperfError(
            f"sample rate {sample_rate} Hz is not taken by the silero 16 kHz VAD; "
            f"allowed: {SAMPLE_RATE} (resample first)"
        )
    audio = np.asarray(audio)
    if audio.ndim != 1:
        raise SpeechperfError(f"audio has shape {audio.shape}; the VAD takes mono audio, one axis of samples")
    if not np.issubdtype(audio.dtype, np.floating):
        raise SpeechperfError(f"audio has dtype {audio.dtype}; the VAD takes float samples in [-1, 1]")
    if audio.size == 0:
        raise SpeechperfError("audio is empty; the VAD needs at least one sample")
    return audio.astype(np.float32, copy=False)


def chunks(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """The audio as [frames, 512] float32, the last chunk zero-padded."""
    audio = _check_audio(audio, sample_rate)
    frames = -(-audio.size // CHUNK)
    padded = np.zeros(frames * CHUNK, dtype=np.float32)
    padded[: audio.size] = audio
    return padded.reshape(frames, CHUNK)


class SileroStream:
    """One audio stream through a silero session: carries the context samples and the LSTM state between calls."""

    def __init__(self, session: Session):
        names = session.input_names
        missing = [n for n in ("input", "state") if n not in names]
        if missing:
            raise SpeechperfError(
                f"session {session!r} lacks the silero input(s) {missing}; it must take "
                "'input' and 'state' (and optionally 'sr')"
            )
        self.session = session
        # The ONNX file takes the sample rate as an input; the TorchScript _model and the paddle port do not.
        self._sr = np.array(SAMPLE_RATE, dtype=np.int64) if "sr" in names else None
        self.reset()

    def reset(self) -> None:
        self.context = np.zeros(CONTEXT, dtype=np.float32)
        self.state = np.zeros((2, 1, HIDDEN), dtype=np.float32)

    def step(self, chunk: np.ndarray) -> float:
        """The speech probability of one 512-sample chunk."""
        feeds = {"input": np.concatenate([self.context, chunk])[None, :], "state": self.state}
        if self._sr is not None:
            feeds["sr"] = self._sr
        result = self.session(feeds)
        self.state = result["stateN"]
        self.context = chunk[-CONTEXT:]
        return float(result["output"].reshape(-1)[0])


def speech_probabilities(session: Session, audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """One speech probability per 512-sample frame (32 ms) of mono 16 kHz ``audio``."""
    stream = SileroStream(session)
    return np.array([stream.step(chunk) for chunk in chunks(audio, sample_rate)], dtype=np.float32)


class SpeechSegment(NamedTuple):
    start: float  # seconds
    end: float  # seconds


def speech_segments(
    probabilities: np.ndarray,
    threshold: float = 0.5,
    min_speech_s: float = 0.25,
    min_silence_s: float = 0.1,
    frame_s: float = FRAME_SECONDS,
) -> list[SpeechSegment]:
    """Speech segments from per-frame probabilities, as silero's ``get_speech_timestamps`` finds them.

    Speech starts at a frame >= ``threshold`` and ends once the probability has stayed below
    ``threshold - 0.15`` (the hysteresis silero uses) for ``min_silence_s``; the segment ends where that silence
    began. Segments shorter than ``min_speech_s`` are dropped. Speech padding and the splitting of long segments
    that silero also does are left out.
    """
    if not 0.0 < threshold < 1.0:
        raise SpeechperfError(f"threshold {threshold} is out of range; allowed: 0 < threshold < 1")
    for name, value in (("min_speech_s", min_speech_s), ("min_silence_s", min_silence_s)):
        if value < 0:
            raise SpeechperfError(f"{name} {value} is negative; allowed: >= 0 seconds")
    if frame_s <= 0:
        raise SpeechperfError(f"frame_s {frame_s} must be > 0 seconds")
    low = max(threshold - 0.15, 0.01)
    segments: list[SpeechSegment] = []
    start: int | None = None
    silence_from: int | None = None

    def close(start: int, end: int) -> None:
        if (end - start) * frame_s >= min_speech_s:
            segments.append(SpeechSegment(start * frame_s, end * frame_s))

    for i, p in enumerate(np.asarray(probabilities, dtype=np.float64).reshape(-1)):
        if start is None:
            if p >= threshold:
                start, silence_from = i, None
            continue
        if p >= threshold:
            silence_from = None
        elif p < low:
            if silence_from is None:
                silence_from = i
            if (i + 1 - silence_from) * frame_s >= min_silence_s:
                close(start, silence_from)
                start = silence_from = None
    if start is not None:
        close(start, silence_from if silence_from is not None else len(np.asarray(probabilities).reshape(-1)))
    return segments
