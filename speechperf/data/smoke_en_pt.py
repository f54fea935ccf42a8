"""The English <-> Brazilian Portuguese smoke set (``configs/data/smoke/``, shipped with the configs: 24 short
everyday sentences and their translations, written for this project; its README says what it is for) as pairs, for
the speech datasets ``speechperf data synth`` makes from it.

It is a smoke set, not a research benchmark: it says whether a cascade translates at all and lets runs be compared
with each other, not with published BLEU. ``speechperf data synth --language pt-br`` speaks its Portuguese side
(with the English side as references), ``--language en --smoke-set`` its English side (with the Portuguese side as
references). The text files themselves are text datasets with their ``.ref`` beside them (MT, TTS).
"""

from __future__ import annotations

from speechperf.data import shipped

LANGUAGES = ("en", "pt")


def _lines(name: str) -> tuple[str, ...]:
    text = (shipped.folder() / "data" / "smoke" / name).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


#: (English, Brazilian Portuguese), one meaning per pair: smoke-en-pt.txt beside its .ref.
PAIRS = tuple(zip(_lines("smoke-en-pt.txt"), _lines("smoke-en-pt.ref"), strict=True))


def sentences(language: str) -> tuple[str, ...]:
    """One side of the set: ``en`` or ``pt``."""
    return tuple(pair[LANGUAGES.index(language)] for pair in PAIRS)


def translations(language: str) -> tuple[str, ...]:
    """The other side: the references of a translation out of ``language``."""
    return sentences(LANGUAGES[1 - LANGUAGES.index(language)])
