"""``ProfilerOptions``: PaddleSpeech's one-line profiler option string, parsed strictly or as PaddleSpeech does.

``"batch_range=[10,20]; state=All; sorted_key=total; tracer_option=Default; profile_path=/tmp/profile;
exit_on_finished=true; timer_only=false; api=new"``

Keys and defaults are PaddleSpeech's (``paddlespeech.s2t.utils.profiler``), plus ``timer_only`` from its TTS
profiler (default false here, so an empty string profiles operators as the S2T profiler does), ``api`` (paddle
only: ``new`` = ``paddle.profiler.Profiler``, ``legacy`` = the ``start_profiler``/``stop_profiler`` calls) and
``backend`` (which backend the PaddleSpeech hook drives; empty means the caller decides).

Two ways to read a string (docs/profiler.md lists every difference from PaddleSpeech):

- ``parse(text)`` (strict, speechperf's own ``profile`` command): a bad value, an unknown or a repeated key is one
  line naming the key, the value and what is allowed.
- ``parse(text, strict=False)`` (the PaddleSpeech drop-ins): what PaddleSpeech ignores or defaults is accepted as
  PaddleSpeech reads it (``batch_range=[20,10]`` keeps the default, an unknown key is ignored, a repeated key's last
  value wins, a word that is not "true" is false), and each such case is one warning line, kept in ``warnings``,
  naming what was ignored and the value used; an empty key (``=5``) is ignored, as there. What PaddleSpeech itself
  cannot read (an empty item: ``;``, a trailing ``;``, ``" "``; an item with no ``=`` or with two; a ``batch_range``
  that is not integers, a state paddle refuses) is an error naming PaddleSpeech's own reason. Every space is
  removed before reading, as PaddleSpeech does, except inside ``profile_path`` (kept, with a warning line).

Strict parsing skips empty items (a trailing ``;``) and strips only the ends of a key and a value.
``ProfilerOptionError`` is a ``ValueError``, as PaddleSpeech's errors are.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from speechperf.errors import SpeechperfError
from speechperf.values import PROFILE_STEPS_MAX


class ProfilerOptionError(SpeechperfError, ValueError):
    """A malformed profiler option string (a ``ValueError``, as PaddleSpeech raises for a missing key)."""


STATES = ("CPU", "GPU", "All")
SORTED_KEYS = ("calls", "total", "max", "min", "ave")
TRACER_OPTIONS = ("Default", "OpDetail", "AllOpDetail")
APIS = ("new", "legacy")
#: Which steps the timer figures average: paddle's own timer's (``paddle.profiler.Profiler(timer_only=True)``: from
#: the 10th step after the start to the end of the range) or ``batch_range``'s steps only.
TIMER_WINDOWS = ("paddle_timer", "range")
TRUE_WORDS = ("yes", "true", "t", "1")
FALSE_WORDS = ("no", "false", "f", "0")

_RANGE_HELP = f"two integers [start,end] with 0 <= start < end <= {PROFILE_STEPS_MAX}"
_BOOL_HELP = f"{'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)}"


def _one_of(allowed: tuple[str, ...]):
    def check(inst, attribute, value):
        if value not in allowed:
            hint = [a for a in allowed if a.lower() == str(value).lower()]
            hint = hint or difflib.get_close_matches(str(value), list(allowed), n=1, cutoff=0.5)
            did = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise ProfilerOptionError(f"{attribute.name}={value!r} is not allowed{did}; allowed: {', '.join(allowed)}")

    return check


def _check_range(inst, attribute, value):
    ok = (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] < value[1]
        # PaddleSpeech takes any end; only strict options keep a loop from promising more steps than it can time
        and (value[1] <= PROFILE_STEPS_MAX or not inst.strict)
    )
    if not ok:
        raise ProfilerOptionError(f"batch_range={_show_range(value)} is not allowed; allowed: {_RANGE_HELP}")


def _check_bool(inst, attribute, value):
    if not isinstance(value, bool):
        raise ProfilerOptionError(f"{attribute.name}={value!r} is not a boolean; allowed: {_BOOL_HELP}")


def _check_path(inst, attribute, value):
    if not isinstance(value, str) or not value.strip():
        raise ProfilerOptionError(f"profile_path={value!r} is empty; allowed: a file path (spaces are kept)")


def _check_backend(inst, attribute, value):
    if value is not None and (not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", value)):
        raise ProfilerOptionError(f"backend={value!r} is not a backend name; allowed: a registered name such as paddle")


def _show_range(value) -> str:
    return "[" + ", ".join(map(str, value)) + "]" if isinstance(value, (tuple, list)) else repr(value)


def _frozen(keys: Iterable[str]) -> frozenset[str]:
    return frozenset(keys)


def _lines(lines: Iterable[str]) -> tuple[str, ...]:
    return tuple(lines)


@attrs.frozen
class ProfilerOptions:
    """The effective profiler options. Build one from a string with :meth:`parse`; ``repr`` shows every value."""

    batch_range: tuple[int, int] = attrs.field(default=(10, 20), converter=tuple, validator=_check_range)
    state: str = attrs.field(default="All", validator=_one_of(STATES))
    sorted_key: str = attrs.field(default="total", validator=_one_of(SORTED_KEYS))
    tracer_option: str = attrs.field(default="Default", validator=_one_of(TRACER_OPTIONS))
    profile_path: str = attrs.field(default="/tmp/profile", validator=_check_path)
    exit_on_finished: bool = attrs.field(default=True, validator=_check_bool)
    timer_only: bool = attrs.field(default=False, validator=_check_bool)
    api: str = attrs.field(default="new", validator=_one_of(APIS))
    timer_window: str = attrs.field(default="range", validator=_one_of(TIMER_WINDOWS))
    backend: str | None = attrs.field(default=None, validator=_check_backend)

    @property
    def start(self) -> int:
        return self.batch_range[0]

    @property
    def end(self) -> int:
        return self.batch_range[1]

    #: The keys the string gave (the rest are defaults).
    given: frozenset[str] = attrs.field(default=frozenset(), converter=_frozen, eq=False, repr=False)
    #: False for options read as PaddleSpeech reads them (the drop-ins): backends then warn where strict refuses.
    strict: bool = attrs.field(default=True, eq=False, repr=False)
    #: One line per thing ignored or defaulted while reading the string (lenient parsing only).
    warnings: tuple[str, ...] = attrs.field(default=(), converter=_lines, eq=False, repr=False)
    #: The text each given key had, as PaddleSpeech read it (lenient parsing only; the last of a repeated key).
    texts: dict[str, str] = attrs.field(factory=dict, eq=False, repr=False)

    @classmethod
    def parse(
        cls,
        text: str | None,
        *,
        strict: bool = True,
        defaults: Mapping[str, object] | None = None,
        unchecked: Iterable[str] = (),
    ) -> ProfilerOptions:
        """Parse ``key=value; key=value``. ``None`` or an empty string gives the defaults.

        ``strict=False`` reads the string as PaddleSpeech does (see the module docstring); ``defaults`` replaces
        some defaults (the t2s drop-in's ``timer_only=True``); ``unchecked`` names the keys whose value the module
        being replaced never checks (t2s stores ``state``, ``sorted_key``, ``tracer_option``, ``profile_path`` and
        uses none): a value not allowed is then a warning line and the value used is its case-insensitive match or
        the default (lenient parsing only).
        """
        values: dict[str, Any] = dict(defaults or {})  # each option's parser returns its own type
        if text is None:
            return cls(**values, strict=strict)
        if not isinstance(text, str):
            raise ProfilerOptionError(f"profiler options must be a string like 'batch_range=[10,20]', got {text!r}")
        given: set[str] = set()
        notes: list[str] = []
        texts: dict[str, str] = {}
        if not strict and not text:
            return cls(**values, strict=strict)  # PaddleSpeech's s2t: "if not options_str: return"
        for item in text.split(";"):
            if strict:
                if not item.strip():
                    continue  # a trailing or doubled ';'
                key, sep, raw = item.partition("=")
                key, raw = key.strip(), raw.strip()
                if not sep or not key:
                    raise ProfilerOptionError(
                        f"profiler option {item.strip()!r} is not key=value; write e.g. 'batch_range=[10,20]; state=All'"
                    )
            else:
                key, raw, note = _paddlespeech_item(text, item)
                if note:
                    notes.append(note)
                if not key:
                    continue
            if key not in _PARSERS:
                close = difflib.get_close_matches(key, list(_PARSERS), n=1)
                did = f" (did you mean {close[0]!r}?)" if close else ""
                if strict:
                    raise ProfilerOptionError(f"unknown profiler option {key!r}{did}; known: {', '.join(_PARSERS)}")
                notes.append(f"profiler option {key}={raw!r} is unknown{did}; it was ignored, as in PaddleSpeech")
                continue
            if key in given:
                if strict:
                    raise ProfilerOptionError(f"profiler option {key!r} is given twice; give each option once")
                notes.append(
                    f"profiler option {key!r} is given twice; the last value, {raw!r}, is used, as in PaddleSpeech"
                )
            if strict:
                if not raw:
                    raise ProfilerOptionError(f"profiler option {key!r} has no value; allowed: {_ALLOWED[key]}")
                values[key] = _PARSERS[key](key, raw)
            else:
                read = _lenient_unchecked if key in unchecked else _LENIENT.get(key, _lenient_keep)
                parsed, note = read(key, raw, values.get(key, _default(key)))
                values[key] = parsed
                texts[key] = raw
                if note:
                    notes.append(note)
            given.add(key)
        return cls(**values, given=given, strict=strict, warnings=notes, texts=texts)

    @classmethod
    def coerce(cls, value: ProfilerOptions | str | None) -> ProfilerOptions:
        return value if isinstance(value, ProfilerOptions) else cls.parse(value)

    def to_string(self) -> str:
        """The canonical option string; ``parse(o.to_string()) == o``."""
        parts = []
        for field in attrs.fields(type(self)):
            if field.name in _ORIGIN:
                continue
            value = getattr(self, field.name)
            if value is None:
                continue
            if field.name == "batch_range":
                value = f"[{value[0]},{value[1]}]"
            elif isinstance(value, bool):
                value = str(value).lower()
            parts.append(f"{field.name}={value}")
        return "; ".join(parts)

    def __getitem__(self, key: str):
        """PaddleSpeech's ``options['batch_range']`` access."""
        if key not in _PARSERS:
            raise ProfilerOptionError(f"ProfilerOptions has no option named {key!r}; known: {', '.join(_PARSERS)}")
        value = getattr(self, key)
        return list(value) if key == "batch_range" else value


def _parse_range(key: str, raw: str) -> tuple[int, int]:
    inner = raw
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1]
    elif "[" in raw or "]" in raw:
        raise ProfilerOptionError(f"batch_range={raw!r} has unbalanced brackets; allowed: {_RANGE_HELP}")
    parts = [p.strip() for p in inner.split(",")]
    if len(parts) != 2:
        raise ProfilerOptionError(f"batch_range={raw!r} has {len(parts)} values; allowed: {_RANGE_HELP}")
    if not all(re.fullmatch(r"[+-]?\d+", p) for p in parts):
        raise ProfilerOptionError(f"batch_range={raw!r} is not two integers; allowed: {_RANGE_HELP}")
    start, end = int(parts[0]), int(parts[1])
    if start < 0:
        raise ProfilerOptionError(f"batch_range={raw!r} starts below 0; allowed: {_RANGE_HELP}")
    if start >= end:
        raise ProfilerOptionError(f"batch_range={raw!r} does not end after it starts; allowed: {_RANGE_HELP}")
    return start, end


def _parse_bool(key: str, raw: str) -> bool:
    word = raw.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ProfilerOptionError(f"{key}={raw!r} is not a boolean; allowed: {_BOOL_HELP}")


def _keep(key: str, raw: str) -> str:
    return raw  # validated by the attrs field


def _default(key: str):
    return attrs.fields_dict(ProfilerOptions)[key].default


# -- PaddleSpeech's reading: (key, raw, value so far) -> (value, warning line or None) ----------------------------

_UNPACK = "PaddleSpeech's ProfilerOptions stops on it too (ValueError: {})"


def _paddlespeech_item(text: str, item: str) -> tuple[str, str, str | None]:
    """One ``;``-separated item read as PaddleSpeech reads it: every space removed, then ``key, value =
    kv.split('=')``, which raises on an item without exactly one ``=``. Returns (key, value, warning line or None);
    an empty key (``=5``) matches none of PaddleSpeech's keys and is ignored, as there. A ``profile_path`` keeps its
    spaces (PaddleSpeech's removal would write another file than the one named), with a warning line saying so."""
    bare = item.replace(" ", "")
    if "=" not in bare:
        what = f"an empty item in {text!r} (a ';' with nothing before or after it)" if not bare else None
        what = what or f"profiler option {item.strip()!r} is not key=value"
        reason = _UNPACK.format("not enough values to unpack")
        raise ProfilerOptionError(f"{what}; {reason}; write e.g. 'batch_range=[10,20]; state=All'")
    if bare.count("=") > 1:
        reason = _UNPACK.format("too many values to unpack")
        raise ProfilerOptionError(f"profiler option {item.strip()!r} has more than one '='; {reason}")
    key, raw = bare.split("=")
    if not key:
        return "", raw, f"profiler option {item.strip()!r} has no key; it was ignored, as in PaddleSpeech"
    if key == "profile_path":
        spaced = item.partition("=")[2].strip()
        if spaced != raw:
            return key, spaced, f"profile_path={spaced!r} keeps its spaces; PaddleSpeech removes them ({raw!r})"
    return key, raw, None


def _lenient_range(key: str, raw: str, before) -> tuple[tuple[int, int], str | None]:
    try:  # PaddleSpeech's own reading: list(map(int, value.replace('[', '').replace(']', '').split(',')))
        numbers = [int(p) for p in raw.replace("[", "").replace("]", "").split(",")]
    except ValueError:
        raise ProfilerOptionError(
            f"batch_range={raw!r} is not integers ({_UNPACK.format('int()')}); allowed: {_RANGE_HELP}"
        ) from None
    kept = f"; ignored, {_show_range(before)} is used, as in PaddleSpeech"
    if len(numbers) < 2:
        return before, f"batch_range={raw!r} has {len(numbers)} value{kept}"
    start, end = numbers[:2]
    if start < 0:
        return before, f"batch_range={raw!r} starts below 0{kept}"
    if end <= start:
        return before, f"batch_range={raw!r} does not end after it starts{kept}"
    if len(numbers) > 2:
        rest = ", ".join(map(str, numbers[2:]))
        return (start, end), f"batch_range={raw!r}: {rest} ignored, [{start}, {end}] is used, as in PaddleSpeech"
    return (start, end), None


def _lenient_bool(key: str, raw: str, before) -> tuple[bool, str | None]:
    word = raw.lower()
    if word in TRUE_WORDS:
        return True, None
    if word in FALSE_WORDS:
        return False, None
    return False, f"{key}={raw!r} is not one of {_BOOL_HELP}; read as false, as in PaddleSpeech"


def _lenient_keep(key: str, raw: str, before) -> tuple[object, str | None]:
    if not raw:
        raise ProfilerOptionError(f"profiler option {key!r} has no value; allowed: {_ALLOWED[key]}")
    return _PARSERS[key](key, raw), None


def _lenient_unchecked(key: str, raw: str, before) -> tuple[object, str | None]:
    """A value the replaced module stores and never checks: a bad one never stops the loop."""
    allowed = _CHOICES.get(key)
    if allowed is None:  # profile_path: any text but an empty one
        if raw:
            return raw, None
        return before, f"profile_path is empty; {before!r} is used (PaddleSpeech does not stop on an empty path)"
    if raw in allowed:
        return raw, None
    same = [a for a in allowed if a.lower() == raw.lower()]
    if same:
        return same[0], f"{key}={raw!r} is read as {same[0]!r} (allowed: {', '.join(allowed)})"
    close = difflib.get_close_matches(raw, list(allowed), n=1, cutoff=0.5)
    did = f" (did you mean {close[0]!r}?)" if close else ""
    return before, (
        f"{key}={raw!r} is not allowed{did}; {before!r} is used (allowed: {', '.join(allowed)}; PaddleSpeech "
        f"does not check {key} here)"
    )


def _lenient_sorted_key(key: str, raw: str, before) -> tuple[object, str | None]:
    if raw == "default":  # paddle's legacy stop_profiler takes it: the order events were recorded in
        return before, f"sorted_key='default' (paddle's legacy order as recorded) is read as {before!r}"
    return _lenient_keep(key, raw, before)


def _lenient_own(key: str, raw: str, before) -> tuple[object, str | None]:
    """A key of speechperf's own (``api``, ``timer_window``, ``backend``): PaddleSpeech ignores every value of it,
    so a value not allowed is one warning line and the value so far is kept, never an error."""
    allowed = _CHOICES.get(key)
    if raw and (raw in allowed if allowed else re.fullmatch(r"[A-Za-z0-9_.\-]+", raw)):
        return raw, None
    return before, f"{key}={raw!r} is not allowed ({_ALLOWED[key]}); {before!r} is used (PaddleSpeech has no {key})"


_LENIENT = {
    "api": _lenient_own,
    "timer_window": _lenient_own,
    "backend": _lenient_own,
    "sorted_key": _lenient_sorted_key,
    "batch_range": _lenient_range,
    "exit_on_finished": _lenient_bool,
    "timer_only": _lenient_bool,
}
_ORIGIN = ("given", "strict", "warnings", "texts")
_CHOICES = {
    "state": STATES,
    "sorted_key": SORTED_KEYS,
    "tracer_option": TRACER_OPTIONS,
    "api": APIS,
    "timer_window": TIMER_WINDOWS,
}


_PARSERS = {
    "batch_range": _parse_range,
    "state": _keep,
    "sorted_key": _keep,
    "tracer_option": _keep,
    "profile_path": _keep,
    "exit_on_finished": _parse_bool,
    "timer_only": _parse_bool,
    "api": _keep,
    "timer_window": _keep,
    "backend": _keep,
}

_ALLOWED = {
    "batch_range": _RANGE_HELP,
    "state": ", ".join(STATES),
    "sorted_key": ", ".join(SORTED_KEYS),
    "tracer_option": ", ".join(TRACER_OPTIONS),
    "profile_path": "a file path (spaces are kept)",
    "exit_on_finished": _BOOL_HELP,
    "timer_only": _BOOL_HELP,
    "api": ", ".join(APIS),
    "timer_window": ", ".join(TIMER_WINDOWS),
    "backend": "a registered backend name such as paddle",
}
