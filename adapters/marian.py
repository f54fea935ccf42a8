"""Marian translation in numpy around two sessions (``encoder``, ``decoder_step`` of ``speechperf.zoo.marian``),
shared by every backend, so the same weights translate identically on torch, paddle and onnxruntime.

The source is its SentencePiece ids followed by ``</s>`` (id 0). Decoding starts from Marian's zero embedding
(position 0), carries the decoder's SSRU state from step to step (reordered by the parent rows in beam search),
never emits ``<unk>`` (Marian's default without ``--allow-unk``), and, with a lexical shortlist, scores only the
shortlist's target ids, renormalised over them as Marian's shortlisted output layer does. Greedy (beam 1) and beam
search are ``speechperf.adapters.decoding``'s, bounded by fairseq's ``max_len_a * src_len + max_len_b`` (Marian's
own bound is ``max-length-factor`` 2.5 times the source length with ``</s>``: ``max_len_a`` 2.5, ``max_len_b`` 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from speechperf.adapters.decoding import beam_search_over, greedy_search

EOS, UNK = 0, 1
StepFn = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


def source_feeds(ids) -> dict[str, np.ndarray]:
    """The encoder's feeds for one sentence of SentencePiece ``ids``: the ids then ``</s>``."""
    tokens = np.append(np.asarray(ids, dtype=np.int64).reshape(-1), EOS)
    return {"src_tokens": tokens[None], "src_lengths": np.array([tokens.size], dtype=np.int64)}


class StatefulStep:
    """A ``decoding.SearchStep`` over Marian's ``decoder_step``: the last token, its position and the SSRU state."""

    def __init__(self, decoder_step: StepFn, encoded: Mapping[str, np.ndarray], layers: int, allowed=None):
        self.decoder_step, self.layers = decoder_step, layers
        self.memory, self.memory_lengths = encoded["encoder_out"], encoded["encoder_lengths"]
        self.state: np.ndarray | None = None
        self.allowed = None if allowed is None else np.asarray(allowed, dtype=np.int64)
        self.blocked: np.ndarray | None = None  # the ids outside the shortlist, sized on the first call

    def __call__(self, tokens: np.ndarray, parents: np.ndarray | None) -> np.ndarray:
        rows = tokens.shape[0]
        repeat = rows // self.memory.shape[0]
        if self.state is None:
            self.state = np.zeros((self.layers, rows, self.memory.shape[-1]), dtype=np.float32)
        elif parents is not None:
            self.state = self.state[:, parents]
        out = self.decoder_step(
            {
                "tokens": np.ascontiguousarray(tokens[:, -1:], dtype=np.int64),
                "positions": np.full(rows, tokens.shape[1] - 1, dtype=np.int64),
                "state": np.ascontiguousarray(self.state),
                "encoder_out": np.repeat(self.memory, repeat, axis=0) if repeat > 1 else self.memory,
                "encoder_lengths": np.repeat(self.memory_lengths, repeat) if repeat > 1 else self.memory_lengths,
            }
        )
        self.state = np.asarray(out["new_state"], dtype=np.float32)
        log_probs = np.array(out["log_probs"], dtype=np.float32)
        log_probs[:, UNK] = -np.inf
        if self.allowed is not None:
            if self.blocked is None:
                self.blocked = np.ones(log_probs.shape[1], dtype=bool)
                self.blocked[self.allowed[self.allowed < log_probs.shape[1]]] = False
                self.blocked[UNK] = True
            log_probs[:, self.blocked] = -np.inf
            top = log_probs.max(axis=1, keepdims=True)
            log_probs -= top + np.log(np.exp(log_probs - top).sum(axis=1, keepdims=True))
        return log_probs


def translate_ids(
    encoder: StepFn,
    decoder_step: StepFn,
    ids,
    max_len: int,
    beam: int = 1,
    allowed=None,
    layers: int = 2,
    len_penalty: float = 1.0,
) -> np.ndarray:
    """The target SentencePiece ids (without ``</s>``) for one sentence of source ``ids``; ``allowed``: the
    shortlist's target ids for it (``speechperf.zoo.marian_binary.Shortlist.allowed``), or None for the whole
    vocabulary."""
    encoded = encoder(source_feeds(ids))
    step = StatefulStep(decoder_step, encoded, layers, allowed)
    if beam == 1:
        (out,) = greedy_search(step, 1, max_len, start=EOS, eos=EOS, pad=EOS)
    else:
        ((out, _),) = beam_search_over(step, 1, max_len, beam, len_penalty, start=EOS, eos=EOS, pad=EOS)
    return np.asarray(out, dtype=np.int64)
