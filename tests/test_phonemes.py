"""The espeak-ng phoneme front-end (speechperf.adapters.phonemes over the library of espeakng-loader,
speechperf.adapters.espeak) against the espeak-ng program and Piper's rules."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

import pytest

from speechperf.adapters import espeak, phonemes
from speechperf.adapters.phonemes import PhonemizerError, phoneme_ids, phonemize, split_clauses
from tests.needs import needs

needs_espeak = needs("espeak-ng")
ID_MAP = {"_": [0], "^": [1], "$": [2], " ": [3], ",": [8], ".": [10], "?": [13], "a": [14], "b": [15]}


def program_ipa(text: str, voice: str = "en-us", tie: str | None = None) -> str:
    """The espeak-ng program's IPA: the reference the library's phonemes are checked against."""
    tied = [f"--tie={tie}"] if tie else []
    done = subprocess.run(["espeak-ng", "-q", "--ipa", *tied, "-v", voice, text], capture_output=True, check=True)
    return " ".join(line.strip() for line in done.stdout.decode().splitlines() if line.strip())


#: Sentences whose phonemes the wheel's library (1.52) and Debian's program (1.51) were seen to agree on.
SENTENCES = [
    ("en-us", "Dr. Smith paid $5.50 for the judge's church."),
    ("pt-br", "A casa é grande e tem um jardim bonito."),
    ("pt-br", "Ação, coração e pão."),
    ("es", "¿Dónde está la biblioteca?"),
]


@needs_espeak
@pytest.mark.parametrize("tie", [None, "^"])
def test_library_phonemizes_as_the_program(tie):
    for voice, text in SENTENCES:
        assert espeak.ipa(text, voice, tie) == program_ipa(text, voice, tie), (voice, text)


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
    assert first == unicodedata.normalize("NFD", program_ipa("Hello,")) + ", " + program_ipa("world.") + "."
    assert second == program_ipa("How are you today?") + "?"
    assert all(len(p) == 1 for s in sentences for p in s)  # one code point per phoneme, as piper splits them


@needs_espeak
def test_voice_is_a_parameter_and_pt_br_gets_piper_default_map():
    english, portuguese = phonemize("casa", "en-us")[0], phonemize("casa", "pt-br")[0]
    assert english != portuguese
    assert "c" not in portuguese  # piper-phonemize maps pt-br's c to k
    assert "".join(portuguese) == program_ipa("casa", "pt-br").replace("c", "k")


def test_ids_put_bos_pad_between_every_phoneme_and_eos():
    assert phoneme_ids(["a", ",", " ", "b", "."], ID_MAP) == [1, 0, 14, 0, 8, 0, 3, 0, 15, 0, 10, 0, 2]


def test_ids_skip_phonemes_missing_from_the_map(caplog):
    assert phoneme_ids(["a", "ʒ", "b"], ID_MAP) == [1, 0, 14, 0, 15, 0, 2]
    assert "'ʒ': 1" in caplog.text


def test_language_flags_are_dropped_and_phonemes_decomposed(monkeypatch):
    monkeypatch.setattr(phonemes, "espeak_ipa", lambda text, voice: "(fr)ʒə(en) fa\u00e7")
    assert phonemize("x", "en-us") == [["ʒ", "ə", " ", "f", "a", "c", "\u0327"]]


def test_unknown_voice_is_one_line_naming_it_and_the_voices():
    with pytest.raises(PhonemizerError, match="no voice 'xx-nowhere'; allowed: .*en-us, .*pt-br"):
        phonemize("hello", "xx-nowhere")


def test_missing_espeakng_loader_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # import fails, as when the wheel is not installed
    with pytest.raises(PhonemizerError, match='pip install "espeakng-loader==0.2.4"'):
        espeak.data_files()


def test_a_phonemizing_stage_is_checked_with_the_config(monkeypatch):
    """Piper's and Kokoro's stages find the espeak-ng library and their voice when the config is checked (bench,
    compare and `config check` call check_config), not after the other stages were timed."""
    from speechperf.benchmark.validate import check_phonemizer
    from speechperf.config.schema import StageConfig

    kokoro = StageConfig(text_frontend="kokoro", voice="xx-nowhere")
    with pytest.raises(PhonemizerError, match="^stage2: espeak-ng has no voice 'xx-nowhere'; allowed: "):
        check_phonemizer(kokoro, "stage2")
    check_phonemizer(StageConfig(text_frontend="kokoro", voice="pt-br"), "stage2")
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)
    espeak._espeak.cache_clear()  # as in a fresh process without the wheel
    try:
        with pytest.raises(PhonemizerError, match="^stage3: .*espeakng-loader"):
            check_phonemizer(StageConfig(model="piper-joe-medium"), "stage3")
    finally:
        espeak._espeak.cache_clear()
