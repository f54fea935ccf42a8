"""The comma lists a launch is planned from (``--backends``, ``--sweep KEY=V1,V2``), and their one error type.

compare and tune both take ``--backends A,B``: one parser here, so both refuse an empty item, a repeated one and an
unknown backend in the same words.
"""

from __future__ import annotations

from speechperf.errors import SpeechperfError
from speechperf.values import split_items


class PlanError(SpeechperfError):
    """A list of backends, threads or sweep values that cannot be used."""


def split_list(text: str, what: str) -> list[str]:
    """``"a,b, c"`` -> ["a", "b", "c"] (``speechperf.values.split_items``, the parser of every comma list); an empty
    item or a repeated one is an error naming ``what``."""
    items = list(split_items(text, what))
    if not items:
        raise PlanError(f"{what} = {text!r}: an empty item; expected a comma-separated list such as a,b")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise PlanError(f"{what} {text!r}: {', '.join(repeated)} is given more than once")
    return items


def backend_names(text: str | None, option: str = "--backends") -> list[str]:
    """The backends a comma list names, each checked to be registered; None: every registered backend."""
    from speechperf.registry import known_backends

    known = known_backends()
    backends = known if text is None else split_list(text, option)  # '' is refused
    unknown = [b for b in backends if b not in known]
    if unknown:
        raise PlanError(f"{option}: unknown backend {unknown[0]!r}; known backends: {', '.join(known)}")
    return backends
