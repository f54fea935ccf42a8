"""What every meter shares: sample ids, the record of a failed sample, and the names of the meters.

A meter is called once per sample by a benchmark loop. A sample whose forward raises is recorded as a
``SampleFailure`` whose ``message`` is one line naming the sample id; the meter keeps measuring the other samples.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import attrs

from speechperf.errors import SpeechperfError, error_detail, error_text
from speechperf.values import split_items

#: The meters a user can ask for by name (``--meters runtime,memory``).
METER_NAMES = ("runtime", "memory", "flops", "papi", "threads", "roofline")


class MeterError(SpeechperfError):
    """A meter was configured with a value it cannot use."""


@attrs.frozen
class SampleFailure:
    """A sample whose forward raised. ``message`` is one line: ``sample 'utt3' failed in <meter>: Error: text``,
    where the text is the decisive line of a framework's multi-line error; ``detail`` keeps the whole message
    (bounded, see ``speechperf.errors.error_detail``) for the JSON."""

    sample_id: str
    meter: str
    error: str
    detail: str = ""

    @property
    def message(self) -> str:
        return f"sample {self.sample_id!r} failed in the {self.meter} meter: {self.error}"


def failure(sample_id: str, meter: str, exc: BaseException) -> SampleFailure:
    detail = error_detail(exc)
    text = error_text(exc)
    return SampleFailure(str(sample_id), meter, text, detail if detail != text else "")


def parse_meter_names(names: str | Iterable[str]) -> tuple[str, ...]:
    """``"runtime, memory"`` or ``["runtime", "memory"]`` -> validated names, in the order given, without repeats."""
    if isinstance(names, str):
        items = list(split_items(names, "--meters"))
    else:
        items = [str(n).strip() for n in names]
    if not items:
        raise MeterError(f"no meter named; known meters: {', '.join(METER_NAMES)}")
    for name in items:
        if name not in METER_NAMES:
            close = difflib.get_close_matches(name, METER_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise MeterError(f"unknown meter {name!r}{hint}; known meters: {', '.join(METER_NAMES)}")
    return tuple(dict.fromkeys(items))


def check_count(name: str, value: object, minimum: int) -> int:
    """Validate a warm-up or repeat count: an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise MeterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value
