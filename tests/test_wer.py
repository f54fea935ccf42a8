"""WER/CER scoring: normalisation and corpus-level rates against hand counts."""

import pytest

from speechperf.errors import SpeechperfError
from speechperf.meters.wer import normalize, score


def test_normalisation_ignores_case_and_punctuation_but_keeps_contractions():
    assert normalize("Hello, World!  It's 'fine'.") == "hello world it's fine"


def test_corpus_wer_sums_errors_over_utterances():
    # utterance 1: 4 words, 1 substitution; utterance 2: 2 words, 1 deletion -> 2 errors / 6 words
    r = score(["the cat sat down", "go forward"], ["the dog sat down", "go"])
    assert r.wer == pytest.approx(2 / 6)
    assert (r.substitutions, r.deletions, r.insertions, r.words, r.utterances) == (1, 1, 0, 6, 2)
    assert score(["Hello, world."], ["hello world"]).wer == 0.0


def test_cer_counts_characters():
    assert score(["abcd"], ["abed"]).cer == pytest.approx(1 / 4)


@pytest.mark.parametrize(
    "refs,hyps,needle",
    [
        (["a"], [], "one transcript per reference"),
        ([], [], "at least one reference"),
        (["Um, uh!"], ["x"], "empty after normalisation"),  # Whisper drops fillers
    ],
)
def test_bad_input_is_one_clear_error(refs, hyps, needle):
    with pytest.raises(SpeechperfError, match=needle):
        score(refs, hyps)
