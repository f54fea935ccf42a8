"""One benchmark sample: host numpy arrays only, whatever the dataset format was."""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen(eq=False)
class Sample:
    """An input of the first stage.

    ``audio`` is float32 mono at ``sample_rate``; ``features`` is (frames, feat_dim) float32; ``tokens`` is int64
    token ids; ``text`` a sentence (also the reference of an audio sample when the dataset has one: its
    transcript, or its translation for speech translation data).
    """

    id: str
    audio: np.ndarray | None = None
    sample_rate: int | None = None
    features: np.ndarray | None = None
    tokens: np.ndarray | None = None
    text: str | None = None
    #: the source-language transcript of a translation sample (fairseq's ``src_text``); ``text`` is the target
    source_text: str | None = None
    language: str | None = None  # of ``text`` (fairseq's ``tgt_lang``), where the dataset says

    @property
    def audio_rate(self) -> int:
        """The sample rate of ``audio``; every dataset loader that gives audio sets it."""
        if not self.sample_rate:
            raise ValueError(f"sample {self.id!r} is {self.kind}, it has no sample rate")
        return self.sample_rate

    @property
    def kind(self) -> str:
        if self.audio is not None:
            return "audio"
        if self.features is not None:
            return "features"
        if self.tokens is not None:
            return "tokens"
        return "text"

    @property
    def length(self) -> int:
        """Length along time in the sample's own unit (see ``unit``)."""
        if self.audio is not None:
            return int(self.audio.shape[-1])
        if self.features is not None:
            return int(self.features.shape[0])
        if self.tokens is not None:
            return int(self.tokens.shape[-1])
        return len((self.text or "").split())

    @property
    def unit(self) -> str:
        return {"audio": "samples", "features": "frames", "tokens": "tokens", "text": "words"}[self.kind]

    @property
    def seconds(self) -> float | None:
        """Audio duration, or None when the sample is not audio."""
        if self.audio is None or not self.sample_rate:
            return None
        return self.audio.shape[-1] / self.sample_rate
