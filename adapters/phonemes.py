"""espeak-ng phonemes for text-to-speech front-ends (Piper's rules), numpy- and framework-free.

Piper (piper-phonemize) asks the espeak-ng library for the IPA phonemes of one clause at a time, with the clause's
terminator, and builds its sentences from them:

- the clause's phonemes, decomposed to NFD (``ç`` -> ``c`` + U+0327), with espeak's language-switch flags
  (``(fr)`` ... ``(en)``) dropped;
- then the terminator's punctuation: ``.``, ``?``, ``!`` end the sentence; ``,``, ``:``, ``;`` are followed by a
  space and the sentence goes on;
- ids: BOS (``^``), then every phoneme followed by the pad (``_``), then EOS (``$``), through the voice's
  ``phoneme_id_map``; a phoneme missing from the map is skipped (and logged), as piper does.

Here the espeak-ng library of the ``espeakng-loader`` wheel does the phonemization (speechperf.adapters.espeak;
its clause-terminator call is a piper fork addition, so it is not used). Its phonemes come without the terminators,
so the text is split into clauses here, at ``.?!,:;`` followed by a space or the end, each clause phonemized by one
call and given its terminator. Where espeak-ng splits a clause further (an abbreviation such as ``Dr.``), the
pieces are joined with a space. The voice (``en-us``, ``pt-br``, ...) is a parameter, so Kokoro's front-end uses the
same code with its own map.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence

from speechperf.adapters import espeak
from speechperf.adapters.espeak import PhonemizerError

log = logging.getLogger(__name__)

#: Piper's special symbols (piper-phonemize's defaults).
BOS, EOS, PAD = "^", "$", "_"
#: Terminators that end a sentence, and those after which the sentence goes on (followed by a space).
SENTENCE_END = (".", "?", "!")
CLAUSE_END = (",", ":", ";")
#: A clause ends at a run of terminators followed by whitespace or the end of the text ("5.50" is not split).
_CLAUSE = re.compile(r"[.?!,:;]+(?=\s|$)")
#: piper-phonemize's default per-voice phoneme maps (applied after NFD).
DEFAULT_PHONEME_MAPS: dict[str, dict[str, list[str]]] = {"pt-br": {"c": ["k"]}}
__all__ = ["PhonemizerError", "espeak_ipa", "phoneme_ids", "phonemize", "split_clauses", "text_to_ids"]


def split_clauses(text: str) -> list[tuple[str, str]]:
    """``(clause text with its punctuation, terminator)`` pairs; the terminator is one of ``.?!,:;`` or ``""``.

    Of a run of punctuation ("?!", "..."), a question or exclamation mark wins over the rest, as espeak-ng
    classifies the run by its strongest mark.
    """
    text = " ".join(text.split())
    clauses, start = [], 0
    for match in _CLAUSE.finditer(text):
        run = match.group()
        terminator = "?" if "?" in run else "!" if "!" in run else run[0]
        clause = text[start : match.end()].strip()
        if clause.strip(".?!,:; "):
            clauses.append((clause, terminator))
        start = match.end()
    rest = text[start:].strip()
    if rest:
        clauses.append((rest, ""))
    return clauses


def espeak_ipa(text: str, voice: str, tie: str | None = None) -> str:
    """espeak-ng's IPA for ``text`` in ``voice``, each clause it saw joined by a space (speechperf.adapters.espeak,
    the library of the espeakng-loader wheel). With ``tie``, that character joins the two halves of an affricate or
    a diphthong (``d^ʒ``), as Kokoro's front-end asks for (speechperf.adapters.kokoro)."""
    return espeak.ipa(text, voice, tie)


def drop_language_flags(phonemes: str) -> str:
    """Remove espeak's ``(lang)`` switch flags around words of another language (piper keeps the words)."""
    return re.sub(r"\([^)]*\)", "", phonemes)


def phonemize(text: str, voice: str, phoneme_map: Mapping[str, Sequence[str]] | None = None) -> list[list[str]]:
    """Piper's phonemes of ``text``: one list of phonemes (Unicode code points) per sentence."""
    mapping = DEFAULT_PHONEME_MAPS.get(voice, {}) if phoneme_map is None else phoneme_map
    sentences: list[list[str]] = []
    current: list[str] | None = None
    for clause, terminator in split_clauses(text):
        ipa = unicodedata.normalize("NFD", drop_language_flags(espeak_ipa(clause, voice)))
        if current is None:
            current = []
            sentences.append(current)
        for phoneme in ipa:
            current.extend(mapping.get(phoneme, [phoneme]))
        if terminator:
            current.append(terminator)
        if terminator in CLAUSE_END:
            current.append(" ")
        if terminator in SENTENCE_END:
            current = None
    return sentences


def phoneme_ids(
    phonemes: Sequence[str], id_map: Mapping[str, Sequence[int]], *, bos: str = BOS, eos: str = EOS, pad: str = PAD
) -> list[int]:
    """BOS, pad, then each phoneme's ids followed by the pad, then EOS (piper-phonemize's ``phonemes_to_ids``)."""
    for special in (bos, eos, pad):
        if special not in id_map:
            raise PhonemizerError(f"the phoneme id map has no {special!r}; it needs {bos!r}, {eos!r} and {pad!r}")
    ids = [*id_map[bos], *id_map[pad]]
    missing: dict[str, int] = {}
    for phoneme in phonemes:
        if phoneme not in id_map:
            missing[phoneme] = missing.get(phoneme, 0) + 1
            continue
        ids.extend(id_map[phoneme])
        ids.extend(id_map[pad])
    ids.extend(id_map[eos])
    if missing:
        log.warning("phonemes missing from the id map were skipped: %s", missing)
    return ids


def text_to_ids(
    text: str,
    voice: str,
    id_map: Mapping[str, Sequence[int]],
    phoneme_map: Mapping[str, Sequence[str]] | None = None,
) -> list[int]:
    """Ids of the whole text as one utterance: its sentences' phonemes joined by a space (piper speaks each
    sentence with its own call; one call per text keeps one input per sample here)."""
    sentences = phonemize(text, voice, phoneme_map)
    joined: list[str] = []
    for n, sentence in enumerate(sentences):
        if n:
            joined.append(" ")
        joined.extend(sentence)
    return phoneme_ids(joined, id_map)
