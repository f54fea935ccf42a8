"""Checked fields: how a setting a user writes is declared (``key``) and how a given value is checked against it.

The attrs classes a user fills in (the benchmark config's sections, each backend's ``options_class``) make their
fields with ``key(default, help, kind, choices, minimum, maximum)``; ``check_value`` converts and checks one value
against such a field and raises one line naming the key, the value and what is allowed. This module is a leaf: the
config loader and the backend contract both use it, and it imports neither (see docs/architecture.md, "Layers").
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable
from typing import Any

import attrs

from speechperf.errors import SpeechperfError, shorten


class ConfigError(SpeechperfError):
    """A config that cannot be used; the message names file, line, key, value and what is allowed."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; a container or ``taskset`` gives fewer than the
    machine has): more threads than this only oversubscribe them, and thousands hang the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


@attrs.frozen
class Limit:
    """A bound known only on the machine that runs (the usable cores): ``text`` says it in the docs, ``value``
    gives it here."""

    text: str
    value: Callable[[], float]


#: The upper bound of every thread count: a config's ``threads``, ``--threads``, and a backend's ``load``.
CORES = Limit("the cores this process may use", usable_cores)
#: The largest seed: numpy's RandomState takes seeds below 2**32, and every framework's seed fits it.
SEED_MAX = 2**32 - 1
#: The highest audio sample rate a setting may name (Hz): 384 kHz is the highest rate audio hardware records.
SAMPLE_RATE_MAX = 384_000
#: The most samples a dataset (generated, synthesized or a subset of one) may be asked to hold.
DATASET_MAX = 1_000_000
#: The most process runs a command may be asked for (compare/optimize ``--runs``, ``--best-runs``): each run is a
#: fresh process of seconds at least, so 10,000 is already days; a larger count is a typo, not a plan.
RUNS_MAX = 10_000
#: The most children ``compare --jobs`` may start at once: more only share the same cores (and the warning says so).
JOBS_MAX = 256
#: The most elements one generated input array may hold (``profile --input x:4x80x100``): 2**28 float32 values are
#: 1 GiB, beyond any speech model's input; a larger shape would fail to allocate, or swap the machine.
ELEMENTS_MAX = 2**28
#: The highest step a profiler's ``batch_range`` may end at: each step is a forward, and 100,000 of them is hours.
PROFILE_STEPS_MAX = 100_000


def key(
    default: Any,
    help: str,
    kind: str,
    choices: tuple[str, ...] | None = None,
    minimum: float | None = None,
    maximum: float | Limit | None = None,
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


def bounds_text(meta, here: bool = False) -> str:
    """The allowed range of a number key, as the docs and the loader's errors both say it: ``> 0 and < 1``;
    ``here`` adds a machine's bound's value on this machine (``<= the cores this process may use (2)``)."""
    low, high = (">", "<") if meta.get("exclusive") else (">=", "<=")
    parts = []
    for op, k in ((low, "minimum"), (high, "maximum")):
        bound = meta.get(k)
        if isinstance(bound, Limit):
            parts.append(f"{op} {bound.text}" + (f" ({bound.value():g} here)" if here else ""))
        elif bound is not None:  # an int exactly (the largest seed is 4294967295, not 4.29497e+09)
            parts.append(f"{op} {bound:g}" if isinstance(bound, float) else f"{op} {bound}")
    return " and ".join(parts)


def check_range(value: Any, name: str, minimum: float | Limit | None = None, maximum: float | Limit | None = None):
    """``value`` if it is a finite number inside [minimum, maximum], else a ConfigError: ``{name} = {value!r};
    must be ...``. The one range check of a number from a config, an option or a file (its bounds may be a
    ``Limit``: the usable cores)."""
    meta = {"minimum": minimum, "maximum": maximum}
    if not in_bounds(value, meta):
        raise ConfigError(f"{name} = {value!r}; must be {bounds_text(meta, here=True) or 'a finite number'}")
    return value


def in_bounds(value: Any, meta) -> bool:
    """Whether the number ``value`` is finite and inside the bounds of ``meta`` (a field's, or ``check_range``'s)."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    low, high = (b.value() if isinstance(b, Limit) else b for b in (meta.get("minimum"), meta.get("maximum")))
    if meta.get("exclusive"):
        return (low is None or value > low) and (high is None or value < high)
    return (low is None or value >= low) and (high is None or value <= high)


def split_items(text: str, name: str) -> tuple[str, ...]:
    """A comma-separated list (``"runtime, memory"``) as its items: the one parser of every comma list (a config's
    list keys, ``--meters``, ``--backends``, ``--threads``, sweep values). An empty item (``runtime,,memory``,
    ``a,``) is refused, never dropped: it is a typo, and a dropped one would change what runs. A text with no item
    at all (``''``, ``' , '``) is ``()``, which each caller refuses in its own words ("no meter named")."""
    if not text.replace(",", "").strip():
        return ()
    items = tuple(item.strip() for item in text.split(","))
    if not all(items):
        raise ConfigError(f"{name} = {text!r}: an empty item; expected a comma-separated list such as a,b")
    return items


def suggest(word: str, options: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options``, or "" when none is close."""
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


KIND_TEXT = {
    "str": "a string",
    "str?": "a string or null",
    "int": "an integer",
    "int?": "an integer or null",
    "float": "a finite number",
    "float?": "a finite number or null",
    "bool": "true or false",
    "list[str]": "a list of strings",
    "list[float]": "a list of finite numbers",
    "inputs": "a list of {name, source, dtype} mappings",
    "array?": "a number or a nested list of numbers",
    "options": "a mapping of backend name -> options",
    "options?": "a mapping of backend name -> options, or null",
    "path?": "a file path, a mapping of backend name -> file path, or null",
    "tolerance?": "a mapping of output name -> {max_rel, snr_db, cosine, max_abs}, or null",
    "features": "a preset name or a mapping of feature settings",
}


def bad_value(value: Any, name: str, at: str, allowed: str) -> ConfigError:
    return ConfigError(f"{at}: {name} = {shorten(value)} ({type(value).__name__}); expected {allowed}")


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
    if base == "str" and isinstance(value, bool):
        # YAML 1.1 reads off/on/no/yes/false/true unquoted as booleans: `compile: off` means the choice 'off'
        word = "on" if value else "off"
        if choices is None or word not in choices:
            allowed = f"one of {', '.join(choices)}" if choices else KIND_TEXT[kind]
            raise bad(f"{allowed} (YAML reads an unquoted on/off/yes/no/true/false as a boolean: quote the text)")
        out: Any = word
    elif base == "str":
        if not isinstance(value, str):
            raise bad(KIND_TEXT[kind])
        out = value
    elif base == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(KIND_TEXT[kind])
        out = value
    elif base == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad(KIND_TEXT[kind])
        out = float(value)
    elif base == "bool":
        if not isinstance(value, bool):
            raise bad(KIND_TEXT[kind])
        out = value
    elif base == "list[str]":
        if isinstance(value, str):
            value = list(split_items(value, f"{at}: {name}"))
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise bad(KIND_TEXT[kind])
        out = tuple(value)
    elif base == "list[float]":
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
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
            raise ConfigError(f"{at}: {name} = {shorten(given)} is empty; allowed: one or more of {', '.join(choices)}")
        for item in out if isinstance(out, tuple) else (out,):
            if item not in choices:
                raise ConfigError(
                    f"{at}: {name} = {shorten(value)}; allowed: {', '.join(choices)}{suggest(str(item), list(choices))}"
                )
    if minimum is not None or meta.get("maximum") is not None:
        for item in out if isinstance(out, tuple) else (out,):  # a list of numbers: each one
            if not in_bounds(item, meta):
                raise ConfigError(f"{at}: {name} = {shorten(value)}; must be {bounds_text(meta, here=True)}")
    return out


def parse_thread_counts(text: str, name: str = "--threads") -> tuple[int, ...]:
    """``"1,2"`` -> (1, 2): each a whole number from 1 to the usable cores (``CORES``), none twice; the one parser of
    every thread-count list (``compare --threads``, ``check --threads``)."""
    items = split_items(text, name)
    if not items:
        raise ConfigError(f"{name} = {text!r}: no thread count; expected a comma-separated list such as 1,2")
    counts = []
    for item in items:
        try:
            count = int(item)
        except ValueError:
            raise ConfigError(
                f"{name} = {item!r}; must be a whole number >= 1 and <= {CORES.text} ({CORES.value():g} here)"
            ) from None
        counts.append(check_range(count, name, 1, CORES))
    repeated = sorted({n for n in counts if counts.count(n) > 1})
    if repeated:
        raise ConfigError(f"{name} {text!r}: {', '.join(map(str, repeated))} is given more than once")
    return tuple(counts)
