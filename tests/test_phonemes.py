"""The espeak-ng phoneme front-end (speechperf.adapters.phonemes) against the espeak-ng program and Piper's rules."""

from __future__ import annotations

import subprocess
import unicodedata

import pytest

from speechperf.adapters import phonemes
from speechperf.adapters.phonemes import PhonemizerError, phoneme_ids, phonemize, split_clauses
from tests.needs import needs

needs_espeak = needs("espeak-ng")
ID_MAP = {"_": [0], "^": [1], "$": [2], " ": [3], ",": [8], ".": [10], "?": [13], "a": [14], "b": [15]}


def espeak(text: str, voice: str = "en-us") -> str:
    done = subprocess.run(["espeak-ng", "-q", "--ipa", "-v", voice, text], capture_output=True, check=True)
    return " ".join(line.strip() for line in done.stdout.decode().splitlines() if line.strip())


def test_clauses_end_at_punctuation_followed_by_space_or_the_end():
    got = split_clauses("Hello, world. It costs $5.50: really?! Yes;  no\nmaybe")
    assert got == [
        ("Hello,", ","),
        ("world.", "."),
        ("It costs $5.50:", ":"),
        ("really?!", "?"),
        ("Yes;", ";"),
        ("no maybe", ""),
    ]
    assert split_clauses(" ... ") == []


@needs_espeak
def test_sentences_follow_piper_punctuation_rules():
    sentences = phonemize("Hello, world. How are you today?", "en-us")
    assert len(sentences) == 2  # a period ends the sentence, a comma does not
    first, second = ("".join(s) for s in sentences)
    # Each clause is espeak-ng's own IPA (NFD), then its punctuation: a comma and a space, or the final mark.
    assert first == unicodedata.normalize("NFD", espeak("Hello,")) + ", " + espeak("world.") + "."
    assert second == espeak("How are you today?") + "?"
    assert all(len(p) == 1 for s in sentences for p in s)  # one code point per phoneme, as piper splits them


@needs_espeak
def test_voice_is_a_parameter_and_pt_br_gets_piper_default_map():
    english, portuguese = phonemize("casa", "en-us")[0], phonemize("casa", "pt-br")[0]
    assert english != portuguese
    assert "c" not in portuguese  # piper-phonemize maps pt-br's c to k
    assert "".join(portuguese) == espeak("casa", "pt-br").replace("c", "k")


def test_ids_put_bos_pad_between_every_phoneme_and_eos():
    assert phoneme_ids(["a", ",", " ", "b", "."], ID_MAP) == [1, 0, 14, 0, 8, 0, 3, 0, 15, 0, 10, 0, 2]


def test_ids_skip_phonemes_missing_from_the_map(caplog):
    assert phoneme_ids(["a", "ʒ", "b"], ID_MAP) == [1, 0, 14, 0, 15, 0, 2]
    assert "'ʒ': 1" in caplog.text


def test_language_flags_are_dropped_and_phonemes_decomposed(monkeypatch):
    monkeypatch.setattr(phonemes, "espeak_ipa", lambda text, voice: "(fr)ʒə(en) fa\u00e7")
    assert phonemize("x", "en-us") == [["ʒ", "ə", " ", "f", "a", "c", "\u0327"]]


@needs_espeak
def test_unknown_voice_is_one_line_naming_it():
    with pytest.raises(PhonemizerError, match="voice 'xx-nowhere'.*espeak-ng --voices"):
        phonemize("hello", "xx-nowhere")


def test_missing_espeak_says_how_to_install(monkeypatch):
    monkeypatch.setattr(phonemes.shutil, "which", lambda name: None)
    with pytest.raises(PhonemizerError, match="apt-get install espeak-ng"):
        phonemize("hello", "en-us")
