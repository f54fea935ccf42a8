"""Autoregressive decoding in numpy over an encoder session and a decoder-step session, shared by every backend.

The decoder-step session takes the prefix ``tokens`` (batch, t), ``encoder_out`` and ``encoder_lengths`` and
returns ``log_probs`` (batch, vocab) of the next token; the prefix starts with EOS, as in fairseq. The searches
themselves (``greedy_search``, ``beam_search_over``) run over any ``SearchStep``, so a decoder with a recurrent
state (``speechperf.adapters.marian``) decodes with the same code. Both greedy and
beam search stop at fairseq's bound ``max_len = int(max_len_a * src_len + max_len_b)`` and force EOS there: with
random weights EOS may never come, and the bound keeps runs finite. The bound is per item (``src_len`` each item's
own source length, not fairseq's padded batch length), so an item decodes the same in a batch as alone
(``general.batch_size``); a finished item is fed PAD until the batch's last item stops.
Because the loop is the same numpy code on every backend, the same model decodes identically everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from speechperf.errors import FeedError

# fairseq's dictionary layout (speechperf.zoo.catalog); repeated so that adapters import only the core's protocols.
BOS, PAD, EOS, UNK = 0, 1, 2, 3

StepFn = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]
#: One step of a search: (the prefixes so far (rows, t), for each row the row of the previous step it continues,
#: None at the first step) -> log-probabilities (rows, vocab) of the next token. A decoder that keeps a state
#: (Marian's SSRU) reorders it by the parent rows and reads only the last token; one that reads the whole prefix
#: ignores them.
SearchStep = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]


def check_tokens(name: str, tokens: np.ndarray, vocab_size: int) -> None:
    """Raise FeedError naming input ``name`` if any token id is outside [0, vocab_size)."""
    tokens = np.asarray(tokens)
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        bad = int(tokens.max() if tokens.max() >= vocab_size else tokens.min())
        raise FeedError(f"input {name!r} has token id {bad}; the vocabulary has ids 0..{vocab_size - 1}")


def max_length(src_len: int, max_len_a: float, max_len_b: int) -> int:
    """fairseq's bound on generated tokens (EOS included), at least 1."""
    return max(1, int(max_len_a * src_len + max_len_b))


def item_limits(max_len: int | np.ndarray, batch: int) -> np.ndarray:
    """``max_len`` (one bound for all, or one per item) as an int64 array of ``batch`` bounds, each at least 1."""
    limits = np.broadcast_to(np.asarray(max_len, dtype=np.int64), (batch,))
    return np.maximum(limits, 1)


def _step(decoder_step: StepFn, tokens, encoder_out, encoder_lengths) -> np.ndarray:
    out = decoder_step({"tokens": tokens, "encoder_out": encoder_out, "encoder_lengths": encoder_lengths})
    log_probs = np.asarray(out["log_probs"], dtype=np.float32).copy()
    log_probs[:, PAD] = -np.inf  # fairseq never generates padding
    return log_probs


def greedy(
    decoder_step: StepFn,
    encoder_out: np.ndarray,
    encoder_lengths: np.ndarray,
    max_len: int | np.ndarray,
) -> list[np.ndarray]:
    """The argmax token at each step, until EOS or ``max_len`` tokens (one bound, or one per item); one int64
    array per item, EOS stripped."""
    step = prefix_step(decoder_step, encoder_out, encoder_lengths)
    return greedy_search(step, encoder_out.shape[0], max_len)


def prefix_step(decoder_step: StepFn, encoder_out: np.ndarray, encoder_lengths: np.ndarray) -> SearchStep:
    """A search step over a decoder-step session that reads the whole prefix (it keeps no state, so the rows a
    step continues from do not matter): ``memory`` rows are repeated to the number of rows searched."""

    def step(tokens: np.ndarray, parents: np.ndarray | None) -> np.ndarray:
        repeat = tokens.shape[0] // encoder_out.shape[0]
        memory = np.repeat(encoder_out, repeat, axis=0) if repeat > 1 else encoder_out
        lengths = np.repeat(encoder_lengths, repeat, axis=0) if repeat > 1 else encoder_lengths
        return _step(decoder_step, tokens, memory, lengths)

    return step


def greedy_search(
    step: SearchStep, batch: int, max_len: int | np.ndarray, start: int = EOS, eos: int = EOS, pad: int = PAD
):
    """Greedy decoding over any search ``step`` (see ``SearchStep``): the argmax at each step until ``eos`` or
    ``max_len`` tokens (one bound, or one per item; ``eos`` forced there); finished rows continue with ``pad``.
    Tokens per item, ``eos`` stripped."""
    limits = item_limits(max_len, batch)
    tokens = np.full((batch, 1), start, dtype=np.int64)
    finished = np.zeros(batch, dtype=bool)
    rows = np.arange(batch)
    for i in range(int(limits.max())):
        log_probs = step(tokens, None if i == 0 else rows)
        nxt = np.where(i < limits - 1, log_probs.argmax(axis=1), eos)
        nxt = np.where(finished, pad, nxt).astype(np.int64)
        tokens = np.concatenate([tokens, nxt[:, None]], axis=1)
        finished |= nxt == eos
        if finished.all():
            break
    return [_strip(row[1:], eos) for row in tokens]


def _strip(row: np.ndarray, eos: int = EOS) -> np.ndarray:
    end = np.flatnonzero(row == eos)
    return row[: end[0]] if len(end) else row


def beam_search(
    decoder_step: StepFn,
    encoder_out: np.ndarray,
    encoder_lengths: np.ndarray,
    max_len: int | np.ndarray,
    beam: int = 5,
    len_penalty: float = 1.0,
) -> list[tuple[np.ndarray, float]]:
    """Beam search as fairseq's over a decoder-step session that reads the whole prefix (``beam_search_over``)."""
    step = prefix_step(decoder_step, encoder_out, encoder_lengths)
    return beam_search_over(step, encoder_out.shape[0], max_len, beam, len_penalty)


def beam_search_over(
    step: SearchStep,
    batch: int,
    max_len: int | np.ndarray,
    beam: int = 5,
    len_penalty: float = 1.0,
    start: int = EOS,
    eos: int = EOS,
    pad: int = PAD,
) -> list[tuple[np.ndarray, float]]:
    """Beam search as fairseq's: (tokens without ``eos``, score) of the best hypothesis per item.

    ``step`` scores ``batch * beam`` rows (see ``SearchStep``); a stateful step reorders its state by the parent
    rows it is given. A hypothesis ends when it emits ``eos`` among the step's top ``beam`` candidates; its score
    is its summed log-probability divided by its length (``eos`` included) to the power ``len_penalty``. An item
    is done when it has ``beam`` finished hypotheses; at its ``max_len`` (one bound, or one per item) every live
    hypothesis is ended with ``eos``. Ties go to the lower beam and token index.
    """
    if beam < 1:
        raise FeedError(f"beam size {beam} is not allowed; it must be >= 1")
    limits = item_limits(max_len, batch)
    tokens = np.full((batch * beam, 1), start, dtype=np.int64)
    scores = np.zeros((batch, beam), dtype=np.float64)
    scores[:, 1:] = -np.inf  # all beams start identical; keep one
    finished: list[list[tuple[float, np.ndarray]]] = [[] for _ in range(batch)]
    done = np.zeros(batch, dtype=bool)
    parents: np.ndarray | None = None
    for i in range(int(limits.max())):
        log_probs = np.array(step(tokens, parents), dtype=np.float64)
        vocab = log_probs.shape[1]
        at_limit = np.repeat(i >= limits - 1, beam)  # the rows of the items at their bound
        if at_limit.any():
            forced = np.full_like(log_probs[at_limit], -np.inf)
            forced[:, eos] = log_probs[at_limit, eos]
            log_probs[at_limit] = forced
        total = (scores.reshape(-1, 1) + log_probs).reshape(batch, beam * vocab)
        order = np.argsort(-total, axis=1, kind="stable")[:, : 2 * beam]
        next_rows = np.zeros(batch * beam, dtype=np.int64)
        next_tokens = np.full(batch * beam, pad, dtype=np.int64)
        next_scores = np.full((batch, beam), -np.inf)
        for b in range(batch):
            kept = 0
            for rank, flat in enumerate(order[b]):
                value = total[b, flat]
                if done[b] or kept == beam or not np.isfinite(value):
                    break
                src, tok = divmod(int(flat), vocab)
                row = b * beam + src
                if tok == eos:
                    if rank >= beam:  # fairseq finalises EOS only among the top `beam` candidates
                        continue
                    hyp = tokens[row, 1:]
                    finished[b].append((value / (len(hyp) + 1) ** len_penalty, hyp.copy()))
                    if len(finished[b]) >= beam:
                        done[b] = True
                    continue
                next_rows[b * beam + kept] = row
                next_tokens[b * beam + kept] = tok
                next_scores[b, kept] = value
                kept += 1
            if not done[b] and kept == 0:
                done[b] = True
            for k in range(kept, beam):  # dead slots: copy a live row, never selected (score -inf)
                next_rows[b * beam + k] = next_rows[b * beam] if kept else b * beam
        if done.all():
            break
        tokens = np.concatenate([tokens[next_rows], next_tokens[:, None]], axis=1)
        scores, parents = next_scores, next_rows
    best = []
    for hyps in finished:
        score, hyp = max(hyps, key=lambda h: h[0]) if hyps else (-np.inf, np.zeros(0, dtype=np.int64))
        best.append((hyp, float(score)))
    return best


def generate(
    encoder: StepFn,
    decoder_step: StepFn,
    feeds: Mapping[str, np.ndarray],
    src_lengths: str,
    beam: int = 1,
    max_len_a: float = 0.0,
    max_len_b: int = 200,
    len_penalty: float = 1.0,
    vocab_size: int | None = None,
) -> list[np.ndarray]:
    """Encode ``feeds``, then decode greedily (``beam`` 1) or with beam search; token ids per item.

    ``src_lengths`` names the feed holding the source lengths (``feature_lengths``, ``src_lengths``), which sets
    each item's bound ``max_len_a * src_len + max_len_b``. With ``vocab_size``, every feed named ``*tokens`` is checked
    to hold ids of that vocabulary (an exported graph would otherwise read out of its embedding table).
    """
    if vocab_size is not None:
        for name, value in feeds.items():
            if name.endswith("tokens"):
                check_tokens(name, value, vocab_size)
    if src_lengths not in feeds:
        raise FeedError(f"feed {src_lengths!r} (the source lengths) is missing; feeds: {', '.join(feeds)}")
    encoded = encoder(feeds)
    limit = np.array([max_length(int(n), max_len_a, max_len_b) for n in np.asarray(feeds[src_lengths]).reshape(-1)])
    out, lengths = encoded["encoder_out"], encoded["encoder_lengths"]
    if beam == 1:
        return greedy(decoder_step, out, lengths, limit)
    return [hyp for hyp, _ in beam_search(decoder_step, out, lengths, limit, beam, len_penalty)]


def ctc_greedy(logits: np.ndarray, lengths: np.ndarray, blank: int = BOS) -> list[np.ndarray]:
    """Best-path CTC decoding: argmax per frame, repeats collapsed, blanks removed (fairseq's blank is BOS, 0)."""
    result = []
    for row, n in zip(np.asarray(logits).argmax(axis=-1), lengths):
        path = row[: int(n)]
        keep = np.ones(len(path), dtype=bool)
        keep[1:] = path[1:] != path[:-1]
        path = path[keep]
        result.append(path[path != blank].astype(np.int64))
    return result
