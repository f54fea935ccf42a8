"""Cost against input length: how a stage's runtime grows with the audio it processes.

For speech, most of the spread of per-sample runtimes is the spread of clip lengths, not noise. Two fits say what
a deployment needs to know (docs/benchmark.md, "Cost against input length"):

- linear, ordinary least squares of runtime (ms) on audio seconds: ``runtime = fixed_ms + ms_per_audio_s * seconds``;
  ``ms_per_audio_s`` is the marginal cost of one more second of audio, ``fixed_ms`` the cost of an empty input;
- log-log, least squares of ``log(runtime)`` on ``log(seconds)``: the slope is the exponent of
  ``runtime ∝ seconds**k``, with its standard error (``scipy.stats.linregress``). k near 1 is linear cost; k clearly
  above 1 (more than two standard errors above 1) is an encoder whose attention grows faster than the audio, and
  the fit says so in its ``note``.

The audio is the stage's input for speech-input roles and its output for TTS and vocoders
(``speechperf.benchmark.stage.Stage.audio_side``). With fewer than three distinct lengths, a line through the points
says nothing about its own error: no fit is made and ``reason`` says why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import attrs
import numpy as np

MIN_DISTINCT_LENGTHS = 3
CLEARLY_ABOVE_SIGMAS = 2.0  # the exponent is "clearly above 1" when more than this many standard errors above it


@attrs.frozen
class LengthFit:
    """The fit of one stage's runtimes against its audio seconds; the figures are None when ``reason`` says why
    no fit was made."""

    audio: str | None  # "input" or "output" seconds
    points: int
    distinct_lengths: int
    ms_per_audio_s: float | None = None
    fixed_ms: float | None = None
    exponent: float | None = None
    exponent_sigma: float | None = None
    note: str | None = None  # set when the exponent is clearly above 1
    reason: str | None = None  # set when there is no fit

    def text(self) -> str:
        """``3.35 ms per input audio-second, fixed 0.98 ms, log-log exponent 0.94 ± 0.03`` or why there is no fit."""
        if self.reason:
            return f"no length fit: {self.reason}"
        text = (
            f"{self.ms_per_audio_s:.2f} ms per {self.audio} audio-second, fixed {self.fixed_ms:.2f} ms, "
            f"log-log exponent {self.exponent:.2f}"
        )
        if self.exponent_sigma is not None:
            text += f" ± {self.exponent_sigma:.2f}"
        return text + (f"; {self.note}" if self.note else "")


def fit(seconds: Sequence[float], runtime_s: Sequence[float], audio: str | None = "input") -> LengthFit:
    """Fit runtimes (seconds) against audio lengths (seconds), one point per sample."""
    if len(seconds) != len(runtime_s):
        raise ValueError(f"{len(seconds)} lengths for {len(runtime_s)} runtimes")
    pairs = [(x, y) for x, y in zip(seconds, runtime_s) if x is not None and y is not None]
    distinct = len({round(x, 6) for x, _ in pairs})
    base = functools.partial(LengthFit, audio, len(pairs), distinct)
    if audio is None:
        return base(reason="this stage's role has no audio side (neither input nor output speech)")
    if distinct < MIN_DISTINCT_LENGTHS:
        return base(
            reason=f"{distinct} distinct audio length(s), a fit needs at least {MIN_DISTINCT_LENGTHS}",
        )
    x = np.asarray([p[0] for p in pairs], dtype=np.float64)
    y_ms = np.asarray([p[1] for p in pairs], dtype=np.float64) * 1e3
    slope, intercept = np.polyfit(x, y_ms, 1)
    if not (np.all(x > 0) and np.all(y_ms > 0)):
        return base(ms_per_audio_s=float(slope), fixed_ms=float(intercept), reason="a length or runtime is 0")
    from scipy.stats import linregress  # scipy is slow to import; only the fit needs it

    loglog = linregress(np.log(x), np.log(y_ms))
    sigma = float(loglog.stderr) if len(pairs) > 2 and math.isfinite(loglog.stderr) else None
    exponent = float(loglog.slope)
    note = None
    if sigma is not None and exponent - CLEARLY_ABOVE_SIGMAS * sigma > 1:
        note = (
            f"cost grows faster than the audio: exponent {exponent:.2f} ± {sigma:.2f} is more than "
            f"{CLEARLY_ABOVE_SIGMAS:g} standard errors above 1"
        )
    return base(
        ms_per_audio_s=float(slope),
        fixed_ms=float(intercept),
        exponent=exponent,
        exponent_sigma=sigma,
        note=note,
    )


def to_json(result: LengthFit) -> dict:
    return attrs.asdict(result)
