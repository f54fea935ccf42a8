"""Decoding over fake sessions with known log-probabilities: what greedy and beam search must pick."""

import numpy as np
import pytest

from speechperf.adapters.decoding import (
    EOS,
    PAD,
    beam_search,
    check_tokens,
    ctc_greedy,
    generate,
    greedy,
    max_length,
)
from speechperf.errors import FeedError

VOCAB = 8
A, B, C = 4, 5, 6


def table_step(table, default):
    """A decoder step whose next-token log-probs depend only on the last token of the prefix."""

    def step(feeds):
        assert set(feeds) == {"tokens", "encoder_out", "encoder_lengths"}
        last = feeds["tokens"][:, -1]
        rows = [np.log(table.get(int(t), default)) for t in last]
        return {"log_probs": np.array(rows, dtype=np.float32)}

    return step


def dist(**probs):
    p = np.full(VOCAB, 1e-6)
    for name, value in probs.items():
        p[{"A": A, "B": B, "C": C, "EOS": EOS}[name]] = value
    return p / p.sum()


# After EOS (the start): A is likeliest, but A leads nowhere good; B ends at once with high probability.
GARDEN_PATH = {
    EOS: dist(A=0.5, B=0.4, C=0.1),
    A: dist(A=0.3, B=0.3, C=0.3, EOS=0.1),
    B: dist(EOS=0.95, C=0.05),
    C: dist(EOS=0.9, A=0.1),
}
MEMORY = np.zeros((1, 3, 4), np.float32)
LENGTHS = np.array([3])


def test_greedy_takes_the_argmax_path():
    tokens = greedy(table_step(GARDEN_PATH, dist(EOS=1.0)), MEMORY, LENGTHS, max_len=4)
    # EOS -> A (0.5) -> A (ties A/B/C go to the lowest id) -> A -> forced EOS at max_len
    assert tokens[0].tolist() == [A, A, A]


def test_beam_search_finds_the_sequence_greedy_misses():
    step = table_step(GARDEN_PATH, dist(EOS=1.0))
    ((hyp, score),) = beam_search(step, MEMORY, LENGTHS, max_len=10, beam=2)
    assert hyp.tolist() == [B]
    assert score == pytest.approx((np.log(0.4) + np.log(0.95)) / 2, abs=1e-4)


def test_beam_of_one_equals_greedy_when_eos_comes():
    table = {EOS: dist(C=0.9, A=0.1), C: dist(A=0.8, EOS=0.2), A: dist(EOS=0.99)}
    step = table_step(table, dist(EOS=1.0))
    assert greedy(step, MEMORY, LENGTHS, 10)[0].tolist() == [C, A]
    assert beam_search(step, MEMORY, LENGTHS, 10, beam=1)[0][0].tolist() == [C, A]


def test_max_len_bounds_a_decoder_that_never_ends():
    never = table_step({}, dist(A=1.0, EOS=1e-9))  # EOS below every other token
    src_len, a, b = 10, 0.5, 3
    limit = max_length(src_len, a, b)
    assert limit == 8
    feeds = {"src": np.zeros((2, src_len), np.int64), "src_lengths": np.array([src_len, 4])}

    def encoder(f):
        return {"encoder_out": np.zeros((2, 3, 4), np.float32), "encoder_lengths": np.array([3, 2])}

    for beam in (1, 3):
        out = generate(encoder, never, feeds, "src_lengths", beam=beam, max_len_a=a, max_len_b=b)
        # Each item's own bound (so it decodes as it does alone); max_len counts the forced EOS.
        assert [len(t) for t in out] == [limit - 1, max_length(4, a, b) - 1] == [7, 4]
        assert all((t == A).all() for t in out)


def test_finished_items_are_padded_while_others_continue():
    def step(feeds):
        tokens = feeds["tokens"]
        rows = []
        for i, last in enumerate(tokens[:, -1]):
            if last == PAD:
                rows.append(dist(A=1.0))  # whatever comes after padding must be ignored
            elif i == 0:
                rows.append(dist(EOS=1.0))
            else:
                rows.append(dist(EOS=1.0) if tokens.shape[1] >= 3 else dist(B=1.0))
        return {"log_probs": np.log(np.array(rows, np.float32))}

    out = greedy(step, np.zeros((2, 3, 4), np.float32), np.array([3, 3]), 10)
    assert [t.tolist() for t in out] == [[], [B, B]]


def test_pad_is_never_generated():
    step = table_step({}, dist(EOS=0.1) + np.eye(VOCAB)[PAD])
    assert greedy(step, MEMORY, LENGTHS, 3)[0].tolist() == []


def test_bad_beam_and_missing_lengths_are_named():
    step = table_step({}, dist(EOS=1.0))
    with pytest.raises(FeedError, match="beam size 0"):
        beam_search(step, MEMORY, LENGTHS, 5, beam=0)
    with pytest.raises(FeedError, match="'src_lengths'"):
        generate(lambda f: {}, step, {"x": np.zeros(1)}, "src_lengths")


def test_token_out_of_vocabulary_names_the_input():
    check_tokens("src_tokens", np.array([[4, 5]]), 8)
    with pytest.raises(FeedError, match="input 'src_tokens' has token id 9; the vocabulary has ids 0..7"):
        check_tokens("src_tokens", np.array([[4, 9]]), 8)
    with pytest.raises(FeedError, match="token id -1"):
        check_tokens("src_tokens", np.array([[-1, 2]]), 8)


def test_ctc_greedy_collapses_repeats_and_drops_blanks_within_length():
    path = np.array([[0, 5, 5, 0, 5, 6, 6, 7]])
    logits = np.eye(8)[path]
    assert ctc_greedy(logits, np.array([8]))[0].tolist() == [5, 5, 6, 7]
    assert ctc_greedy(logits, np.array([5]))[0].tolist() == [5, 5]


@pytest.mark.parametrize("beam", [1, 3])
def test_a_batch_with_its_own_bound_per_item_decodes_each_item_as_alone(beam):
    """general.batch_size: items of a batch end at different steps (their own EOS or their own bound) and each
    gets exactly the hypothesis it gets decoded alone."""
    step = table_step({B: dist(EOS=0.9, A=0.1)}, dist(A=0.5, B=0.3, EOS=0.2))
    memory = np.zeros((3, 3, 4), np.float32)
    limits = np.array([1, 6, 4])
    decode = (lambda *a: greedy(step, *a)) if beam == 1 else (lambda *a: [h for h, _ in beam_search(step, *a, beam)])
    batched = decode(memory, np.array([3, 3, 3]), limits)
    alone = [decode(memory[i : i + 1], np.array([3]), int(limits[i]))[0] for i in range(3)]
    assert [t.tolist() for t in batched] == [t.tolist() for t in alone]
    assert len({len(t) for t in batched}) > 1  # they did stop at different steps
