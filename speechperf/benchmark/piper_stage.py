"""The TTS stage over Piper VITS (``speechperf.zoo.piper``): espeak-ng phonemes and the voice's id map
(``speechperf.adapters.phonemes``, untimed input preparation), then encoder -> durations and length regulation ->
flow + HiFi-GAN decoder (``speechperf.adapters.vits``), the same numpy code on every backend.

The noises are drawn inside the timed forward, as Piper's graph samples them inside its own: from a numpy
generator seeded by the sample (the CRC-32 of its id), so every backend and format synthesizes the same waveform
from the same sample, with the voice's inference scales (noise 0.667, length 1, noise_w 0.8).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np

from speechperf.backend import Session
from speechperf.benchmark.stage import Stage, StageError, StageIO
from speechperf.data.sample import Sample


class PiperStage(Stage):
    role = "tts"
    batch_refusal = "it has no batched forward yet (each sample draws its VITS noise from its own seed)"

    def __init__(self, label: str, sessions: Mapping[str, Session], hparams):
        from speechperf.zoo.piper import voice_config

        self.label, self.sessions = label, dict(sessions)
        self.voice = voice_config()
        self.channels = hparams.hidden

    def tokens(self, text: str, seed: int) -> StageIO:
        from speechperf.adapters.phonemes import text_to_ids

        ids = text_to_ids(text, self.voice.espeak_voice, self.voice.phoneme_id_map)
        return {"tokens": np.array(ids, dtype=np.int64), "seed": seed, "text": text}

    def from_sample(self, sample: Sample) -> StageIO:
        if sample.text is None:
            raise StageError(f"sample {sample.id!r} is {sample.kind}; the Piper TTS stage takes text")
        return self.tokens(sample.text, zlib.crc32(sample.id.encode("utf-8")))

    def from_previous(self, output: StageIO) -> StageIO:
        if "text" not in output:
            raise StageError(f"stage {self.label} (tts) takes text; the previous stage gave {sorted(output)}")
        text = str(output["text"])
        return self.tokens(text, zlib.crc32(text.encode("utf-8")))

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        from speechperf.adapters.vits import synthesize

        voice = self.voice
        waveform, _ = synthesize(
            sessions["encoder"],
            sessions["decoder"],
            inp["tokens"],
            np.random.default_rng(inp["seed"]),
            channels=self.channels,
            noise_w=voice.noise_w,
            noise_scale=voice.noise_scale,
            length_scale=voice.length_scale,
        )
        return {"waveform": waveform, "sample_rate": voice.sample_rate}
