"""A stage: one model of a benchmark (S2T, MT, TTS, S2U, unit vocoder, VAD) driven through backend sessions.

A stage turns its input into its output with session calls plus numpy glue (decoding loops, length regulation,
VAD streaming). The glue is the same numpy code on every backend, so a stage decodes identically everywhere.

- ``from_sample(sample)`` makes the stage's input from a dataset sample; ``from_previous(output)`` makes it from
  the previous stage's output. Both are untimed data preparation, done once up front as fairseq does.
- ``run(sessions, inp)`` is one forward, the thing that is timed; it calls only the sessions it is given, so a
  meter can hand it counting proxies (``speechperf.meters.flops``).
- Inputs and outputs are dicts of numpy arrays and plain values: ``features`` (frames, 80) float32, ``audio``
  float32 mono, ``tokens`` / ``units`` int64 (no special symbols around them), ``waveform`` + ``sample_rate``,
  ``segments`` [(start_s, end_s)].
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from speechperf.backend import Session
from speechperf.data.sample import Sample
from speechperf.errors import SpeechperfError

#: Stage roles whose runtime is divided by input audio seconds for RTF; the others by output audio seconds.
#: A direct speech-to-speech model (or a vocoder resynthesising real speech from its mel) is a speech generator, so
#: its RTF divides by the seconds it generates, as TTS's does.
INPUT_AUDIO_ROLES = ("s2t", "s2u", "vad")
OUTPUT_AUDIO_ROLES = ("tts", "unit_vocoder", "s2s")
FRAMES_PER_SECOND = 100  # of the 80-dim fbank every reference speech model takes (10 ms hop)

StageIO = dict[str, Any]


class StageError(SpeechperfError):
    pass


class Stage(abc.ABC):
    role: str
    label: str  # what is run: "s2t/tiny", "silero_vad", "my_model.onnx"
    sessions: Mapping[str, Session]
    load_seconds: float = 0.0
    #: Loads the same model and weights in a format the backend can count FLOPs on, where the timed sessions'
    #: format cannot be counted (see ZooFormat.counted_as); loaded only when FLOPs are counted, after the other
    #: meters, so it weighs on no timing or memory figure.
    flops_twin: Callable[[], Mapping[str, Session]] | None = None

    def flops_sessions(self) -> Mapping[str, Session]:
        """The sessions FLOPs are counted on: the timed ones, or their countable twin."""
        if self.flops_twin is None:
            return self.sessions
        if not hasattr(self, "_twin"):
            self._twin = self.flops_twin()
        return self._twin

    @abc.abstractmethod
    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        """One forward on ``inp`` using ``sessions``."""

    def forward(self, inp: StageIO) -> StageIO:
        return self.run(self.sessions, inp)

    def from_sample(self, sample: Sample) -> StageIO:
        raise StageError(f"stage {self.label} ({self.role}) cannot take a {sample.kind} sample directly")

    def from_previous(self, output: StageIO) -> StageIO:
        raise StageError(f"stage {self.label} ({self.role}) cannot take the output of a previous stage")

    @property
    def audio_side(self) -> str | None:
        if self.role in INPUT_AUDIO_ROLES:
            return "input"
        if self.role in OUTPUT_AUDIO_ROLES:
            return "output"
        return None

    def audio_seconds(self, inp: StageIO, out: StageIO | None) -> float | None:
        """The audio duration RTF divides by: the input's for speech-input roles, the output's for speech output."""
        if self.audio_side == "input":
            if "audio" in inp and inp.get("sample_rate"):
                return len(inp["audio"]) / inp["sample_rate"]
            if "seconds" in inp:
                return inp["seconds"]
            if "features" in inp:
                return inp["features"].shape[0] / FRAMES_PER_SECOND
        if self.audio_side == "output" and out is not None and "waveform" in out:
            return out["waveform"].size / out["sample_rate"]
        return None


def describe_output(out: StageIO) -> dict[str, Any]:
    """The JSON-able part of a stage output that shows what the model produced (compared across backends)."""
    described: dict[str, Any] = {}
    for key in ("tokens", "units"):
        if key in out:
            described[key] = [int(v) for v in np.asarray(out[key]).reshape(-1)]
    if "text" in out:
        described["text"] = str(out["text"])
    if "segments" in out:
        described["segments"] = [[round(float(a), 4), round(float(b), 4)] for a, b in out["segments"]]
    if "waveform" in out:
        wav = np.asarray(out["waveform"]).reshape(-1)
        described["waveform_samples"] = int(wav.size)
        described["sample_rate"] = int(out["sample_rate"])
    if "outputs" in out:
        described["outputs"] = {k: list(np.asarray(v).shape) for k, v in out["outputs"].items()}
    return described
