"""Checked fields: how a setting a user writes is declared (``key``) and how a given value is checked against it.

The attrs classes a user fills in (the benchmark config's sections, each backend's ``options_class``) make their
fields with ``key(default, help, kind, choices, minimum, maximum)``; ``check_value`` converts and checks one value
against such a field and raises one line naming the key, the value and what is allowed. This module is a leaf: the
config loader and the backend contract both use it, and it imports neither (see docs/architecture.md, "Layers").
"""

from __future__ import annotations

import difflib
from typing import Any

import attrs

from speechperf.errors import SpeechperfError


class ConfigError(SpeechperfError):
    """A config that cannot be used; the message names file, line, key, value and what is allowed."""


def key(
    default: Any,
    help: str,
    kind: str,
    choices: tuple[str, ...] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive: bool = False,
):
    """An attrs field with what the loader checks (``kind``, ``choices``, ``minimum`` / ``maximum``, both bounds
    excluded when ``exclusive``) and the doc line."""
    return attrs.field(
        default=default,
        metadata={
            "help": help,
            "kind": kind,
            "choices": choices,
            "minimum": minimum,
            "maximum": maximum,
            "exclusive": exclusive,
        },
    )


def bounds_text(meta) -> str:
    """The allowed range of a number key, as the docs and the loader's errors both say it: ``> 0 and < 1``."""
    low, high = (">", "<") if meta.get("exclusive") else (">=", "<=")
    parts = [f"{op} {meta[k]:g}" for op, k in ((low, "minimum"), (high, "maximum")) if meta.get(k) is not None]
    return " and ".join(parts)


def suggest(word: str, options: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options``, or "" when none is close."""
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


KIND_TEXT = {
    "str": "a string",
    "str?": "a string or null",
    "int": "an integer",
    "int?": "an integer or null",
    "float": "a number",
    "float?": "a number or null",
    "bool": "true or false",
    "list[str]": "a list of strings",
    "list[float]": "a list of numbers",
    "inputs": "a list of {name, source, dtype} mappings",
    "array?": "a number or a nested list of numbers",
    "options": "a mapping of backend name -> options",
    "options?": "a mapping of backend name -> options, or null",
    "path?": "a file path, a mapping of backend name -> file path, or null",
    "tolerance?": "a mapping of output name -> {max_rel, snr_db, cosine, max_abs}, or null",
    "features": "a preset name or a mapping of feature settings",
}


def bad_value(value: Any, name: str, at: str, allowed: str) -> ConfigError:
    return ConfigError(f"{at}: {name} = {value!r} ({type(value).__name__}); expected {allowed}")


def check_value(field: attrs.Attribute, value: Any, name: str, at: str) -> Any:
    """Convert and check one value against its field's kind, choices and minimum; raise one clear line if bad.

    The ``inputs``, ``features``, ``path?`` and ``tolerance?`` kinds (a model file's declared inputs, a stage's
    feature settings, its file or files per backend, its float tolerances) are the config loader's to check."""
    meta = field.metadata
    kind, choices, minimum = meta["kind"], meta["choices"], meta["minimum"]
    given = value

    def bad(allowed: str) -> ConfigError:
        return bad_value(value, name, at, allowed)

    optional = kind.endswith("?")
    base = kind.rstrip("?")
    if value is None:
        if optional:
            return None
        raise bad(KIND_TEXT[kind])
    if base == "str":
        if not isinstance(value, str):
            raise bad(KIND_TEXT[kind])
        out: Any = value
    elif base == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(KIND_TEXT[kind])
        out = value
    elif base == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(KIND_TEXT[kind])
        out = float(value)
    elif base == "bool":
        if not isinstance(value, bool):
            raise bad(KIND_TEXT[kind])
        out = value
    elif base == "list[str]":
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise bad(KIND_TEXT[kind])
        out = tuple(value)
    elif base == "list[float]":
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            raise bad(KIND_TEXT[kind])
        out = tuple(float(v) for v in value)
    elif base == "array":  # checked against the input's dtype by the config loader, which knows it
        out = value
    elif base == "options":
        if not isinstance(value, dict):
            raise bad(KIND_TEXT[kind])
        out = value
    else:  # pragma: no cover - a schema bug
        raise AssertionError(kind)
    if choices is not None:
        if out == ():  # e.g. --meters "": a run that measures nothing is a mistake, not a request
            raise ConfigError(f"{at}: {name} = {given!r} is empty; allowed: one or more of {', '.join(choices)}")
        for item in out if isinstance(out, tuple) else (out,):
            if item not in choices:
                raise ConfigError(
                    f"{at}: {name} = {value!r}; allowed: {', '.join(choices)}{suggest(str(item), list(choices))}"
                )
    if minimum is not None or meta.get("maximum") is not None:
        low, high = meta["minimum"], meta.get("maximum")
        if meta.get("exclusive"):
            inside = (low is None or out > low) and (high is None or out < high)
        else:
            inside = (low is None or out >= low) and (high is None or out <= high)
        if not inside:
            raise ConfigError(f"{at}: {name} = {value!r}; must be {bounds_text(meta)}")
    return out
