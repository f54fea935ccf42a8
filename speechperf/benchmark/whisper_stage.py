"""The S2T stage over a Whisper model of the zoo (``speechperf.zoo.whisper``): Whisper's log-mel of the first
30 s, then greedy decoding with the decoder's KV cache (``speechperf.adapters.whisper``), the same numpy code on
every backend. Its output holds the token ids (special tokens stripped) and the text."""

from __future__ import annotations

from collections.abc import Mapping

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
        self.vocab = WhisperVocabulary.from_dir(model_dir())
        self.max_len_a, self.max_len_b = stage_cfg.max_len_a, stage_cfg.max_len_b

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

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        from speechperf.adapters.whisper import transcribe_features

        (ids,) = transcribe_features(
            sessions["encoder"],
            sessions["cross_kv"],
            sessions["decoder_step"],
            inp["features"][None],
            self.vocab,
            self.max_tokens(inp["seconds"]),
        )
        return {"tokens": np.asarray(ids, dtype=np.int64), "text": self.vocab.decode(ids)}
