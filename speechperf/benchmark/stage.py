"""A stage: one model of a benchmark (S2T, MT, TTS, S2U, unit vocoder, VAD) driven through backend sessions.

A stage turns its input into its output with session calls plus numpy glue (decoding loops, length regulation,
VAD streaming). The glue is the same numpy code on every backend, so a stage decodes identically everywhere.

- ``from_sample(sample)`` makes the stage's input from a dataset sample; ``from_previous(output)`` makes it from
  the previous stage's output. Both are untimed data preparation, done once up front as fairseq does.
- ``run(sessions, inp)`` is one forward, the thing that is timed; it calls only the sessions it is given, so a
  meter can hand it counting proxies (``speechperf.meters.flops``).
- ``run_batch(sessions, inps)`` is one forward of a padded batch (``general.batch_size``), whose outputs must equal
  the batch-1 outputs of ``run``: a stage that cannot promise that leaves it out and says why in
  ``batch_refusal``; ``batch_length(inp)`` is what samples are sorted by before they are grouped.
- Inputs and outputs are dicts of numpy arrays and plain values: ``features`` (frames, 80) float32, ``audio``
  float32 mono, ``tokens`` / ``units`` int64 (no special symbols around them), ``waveform`` + ``sample_rate``,
  ``segments`` [(start_s, end_s)].
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
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
    #: The backend the stage's sessions run on, where it is not the run's (a stage pinned with ``stageN.backend``):
    #: its synchronize, memory and FLOP counter are the ones that measure it.
    backend: Any = None
    #: Loads the same model and weights in a format the backend can count FLOPs on, where the timed sessions'
    #: format cannot be counted (see ZooFormat.counted_as); loaded only when FLOPs are counted, after the other
    #: meters, so it weighs on no timing or memory figure.
    flops_twin: Callable[[], Mapping[str, Session]] | None = None
    #: What a text stage says it does: ``transcribe`` (text in the speech's language, scored with WER against the
    #: source transcripts) or ``translate`` (text in another language, scored with BLEU / chrF against the target
    #: texts), as Whisper's ``task``; None where the stage does not say (speechperf.benchmark.text_reference).
    task: str | None = None
    #: The language of the speech, where the stage is told it (Whisper's ``src_lang``).
    src_lang: str | None = None
    #: Every input padded to this many seconds (Whisper's 30 s log-mel window): its cost does not follow the clip's
    #: length, and the length fit says so instead of fitting (speechperf.length_cost).
    padded_to_s: float | None = None

    #: What the stage puts out (speechperf.config.schema.OUTPUT_KINDS); None: its role's. Only a waveform is audio.
    declared_output_kind: str | None = None

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

    #: Why this stage refuses batch_size > 1 (its outputs would change with padding); None where ``run_batch`` is
    #: its batched forward.
    batch_refusal: str | None = "it has no batched forward"

    def run_batch(self, sessions: Mapping[str, Session], inps: Sequence[StageIO]) -> list[StageIO]:
        """One forward on a batch of inputs (padded inside); one output per input, each equal to ``run``'s."""
        raise StageError(f"stage {self.label} ({self.role}) cannot batch: {self.batch_refusal}")

    def forward_batch(self, inps: Sequence[StageIO]) -> list[StageIO]:
        if len(inps) == 1:  # a batch of one is the unbatched forward, exactly
            return [self.forward(inps[0])]
        return self.run_batch(self.sessions, inps)

    def batch_length(self, inp: StageIO) -> int:
        """The length samples are sorted by before batching (frames, tokens, units or audio samples)."""
        for name in ("features", "tokens", "units", "audio"):
            if name in inp:
                return int(np.asarray(inp[name]).shape[0])
        return 0

    #: Seconds of work outside the timed forward, by step (a front-end's features, a mask's resynthesis), summed
    #: over the samples: reported apart, never in the runtime.
    untimed_s: dict[str, float] = {}

    def finish(self, inp: StageIO, out: StageIO) -> StageIO:
        """Untimed work on a forward's output before it is kept or handed on (a mask resynthesized into speech)."""
        return out

    def from_sample(self, sample: Sample) -> StageIO:
        raise StageError(f"stage {self.label} ({self.role}) cannot take a {sample.kind} sample directly")

    def from_previous(self, output: StageIO) -> StageIO:
        raise StageError(f"stage {self.label} ({self.role}) cannot take the output of a previous stage")

    @property
    def output_kind(self) -> str:
        from speechperf.config.schema import resolve_output_kind

        return resolve_output_kind(self.declared_output_kind, self.role)

    @property
    def puts_out_speech(self) -> bool:
        """Whether its output holds a waveform (dumped as wav, scored as speech)."""
        return self.output_kind == "waveform"

    @property
    def audio_side(self) -> str | None:
        """Whose seconds RTF divides by: the input's for speech-input roles and for a speech role whose output is
        no waveform (an enhancement model's mask: the seconds it was given); the output's for speech output."""
        if self.role in INPUT_AUDIO_ROLES:
            return "input"
        if self.role in OUTPUT_AUDIO_ROLES:
            return "output" if self.output_kind == "waveform" else "input"
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


def pad_stack(arrays: Sequence[np.ndarray], value: float | int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Arrays of one rank stacked along a new batch axis, padded with ``value`` along their first axis to the
    longest; and their int64 lengths."""
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    first = arrays[0]
    out = np.full((len(arrays), int(lengths.max()), *first.shape[1:]), value, dtype=first.dtype)
    for i, a in enumerate(arrays):
        out[i, : a.shape[0]] = a
    return out, lengths


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
    if out.get("outputs"):
        described["outputs"] = {k: list(np.asarray(v).shape) for k, v in out["outputs"].items()}
    return described
