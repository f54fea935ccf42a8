"""The S2T stage over a Whisper model of the zoo (``speechperf.zoo.whisper``): Whisper's log-mel of the first
30 s, then greedy decoding with the decoder's KV cache (``speechperf.adapters.whisper``), the same numpy code on
every backend. Its output holds the token ids (special tokens stripped), the text and the language it was decoded in
(``src_lang``, or the one a multilingual model detected: the quality meter scores the text in it). ``src_lang`` and ``task``
(stage keys) make the prompt of a multilingual model: ``task: translate`` is speech-to-text translation into
English (a Cascaded2StageS2ST's first stage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from speechperf.backend import Session
from speechperf.benchmark.stage import Stage, StageError, StageIO
from speechperf.data.audio import resample
from speechperf.data.sample import Sample

#: Whisper's own bound on generated tokens (half its 448-token context).
MAX_TOKENS = 224


class WhisperStage(Stage):
    role = "s2t"

    def __init__(self, label: str, sessions: Mapping[str, Session], stage_cfg):
        from speechperf.adapters.whisper import WhisperVocabulary
        from speechperf.zoo.whisper import model_dir

        self.label, self.sessions = label, dict(sessions)
        self.vocab = WhisperVocabulary.from_dir(model_dir(stage_cfg.model))
        self.max_len_a, self.max_len_b = stage_cfg.max_len_a, stage_cfg.max_len_b
        # Checked against the model's tokenizer before anything is built (benchmark/validate).
        self.src_lang, self.task = stage_cfg.src_lang, stage_cfg.task

    def from_sample(self, sample: Sample) -> StageIO:
        from speechperf.adapters.whisper import SAMPLE_RATE, log_mel

        if sample.audio is None:
            raise StageError(
                f"sample {sample.id!r} is {sample.kind}; the Whisper stage takes audio (it computes "
                "Whisper's own log-mel)"
            )
        audio = resample(sample.audio, sample.audio_rate, SAMPLE_RATE)
        return {"features": log_mel(audio), "seconds": len(sample.audio) / sample.audio_rate}

    def max_tokens(self, seconds: float) -> int:
        """fairseq's bound over the source length in encoder frames (50 per second), within Whisper's own."""
        from speechperf.adapters.decoding import max_length

        return min(MAX_TOKENS, max_length(int(round(min(seconds, 30.0) * 50)), self.max_len_a, self.max_len_b))

    padded_to_s = 30.0

    #: batches: every input is the same 30 s log-mel, and each item stops at its own bound (adapters/whisper.py)
    batch_refusal = None

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        return self.run_batch(sessions, [inp])[0]

    def run_batch(self, sessions: Mapping[str, Session], inps: Sequence[StageIO]) -> list[StageIO]:
        from speechperf.adapters.whisper import decode_features

        rows, languages = decode_features(
            sessions["encoder"],
            sessions["cross_kv"],
            sessions["decoder_step"],
            np.stack([inp["features"] for inp in inps]),
            self.vocab,
            np.array([self.max_tokens(inp["seconds"]) for inp in inps], dtype=np.int64),
            self.src_lang,
            self.task or "transcribe",
        )
        return [
            {"tokens": np.asarray(ids, dtype=np.int64), "text": self.vocab.decode(ids), "language": language or "en"}
            for ids, language in zip(rows, languages)
        ]

    def batch_length(self, inp: StageIO) -> int:
        """Every input is padded to 30 s; the audio's own length still groups like with like."""
        return int(round(inp["seconds"] * 1000))
