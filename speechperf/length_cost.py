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
(``speechperf.benchmark.stage.Stage.audio_side``).

A line is printed only when it means what it says; otherwise ``reason`` says why not, in one line:

- at least three distinct lengths, the longest at least twice the shortest (over a narrower span the slope is the
  noise's, not the audio's);
- a cost per audio-second whose 95% interval (Student's t over the residuals) excludes 0, and which is positive: a
  runtime that falls as the audio grows is set by something else (the number of decoded tokens, the load);
- no fixed cost clearly below 0 (its 95% interval below 0): the points do not lie on a line through a real cost;
  unless the exponent is clearly above 1 (a cost growing faster than the audio bends a line below 0), where only the
  exponent is shown. A fixed cost below 0 whose interval includes 0 is shown as indistinguishable from 0.

A stage whose input is padded to a fixed length (Whisper's 30 s log-mel window: ``Stage.padded_to_s``) costs the
same for every clip by design; its fit says so instead of fitting.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import attrs
import numpy as np

MIN_DISTINCT_LENGTHS = 3
MIN_SPAN = 2.0  # the longest length over the shortest a fit needs
CONFIDENCE = 0.95  # of the intervals of the cost per second and the fixed cost
CLEARLY_ABOVE_SIGMAS = 2.0  # the exponent is "clearly above 1" when more than this many standard errors above it


@attrs.frozen
class LengthFit:
    """The fit of one stage's runtimes against its audio seconds. ``reason`` set: no line is shown, and says why
    (the figures, where computed, stay for the JSON's reader)."""

    audio: str | None  # "input" or "output" seconds
    points: int
    distinct_lengths: int
    ms_per_audio_s: float | None = None
    fixed_ms: float | None = None
    exponent: float | None = None
    exponent_sigma: float | None = None
    note: str | None = None  # set when the exponent is clearly above 1
    reason: str | None = None  # set when there is no fit
    ms_per_audio_s_ci: float | None = None  # half-width of its CONFIDENCE interval
    fixed_ms_ci: float | None = None
    padded_to_s: float | None = None  # every input padded to this many seconds: constant cost by design

    def text(self) -> str:
        """``3.35 ± 0.12 ms per input audio-second, fixed 0.98 ± 0.40 ms (95% intervals), log-log exponent 0.94 ±
        0.03`` or why there is no fit."""
        if self.padded_to_s is not None:
            return f"constant by design: {self.reason}"
        if self.reason:
            return f"no length fit: {self.reason}"
        fixed = f"fixed {_pm(self.fixed_ms, self.fixed_ms_ci)} ms"
        if self.fixed_ms is not None and self.fixed_ms < 0:
            fixed = f"fixed cost indistinguishable from 0 ({_pm(self.fixed_ms, self.fixed_ms_ci)} ms)"
        line = (
            f"{_pm(self.ms_per_audio_s, self.ms_per_audio_s_ci)} ms per {self.audio} audio-second, {fixed} "
            f"({CONFIDENCE:.0%} intervals)"
        )
        if self.fixed_ms is not None and self.fixed_ms_ci is not None and self.fixed_ms + self.fixed_ms_ci < 0:
            # a cost growing faster than the audio: only its exponent says something
            line = f"no straight line (it would need a fixed cost of {_pm(self.fixed_ms, self.fixed_ms_ci)} ms)"
        text = f"{line}, log-log exponent {self.exponent:.2f}"
        if self.exponent_sigma is not None:
            text += f" ± {self.exponent_sigma:.2f}"
        return text + (f"; {self.note}" if self.note else "")


def _pm(value: float | None, half: float | None) -> str:
    return f"{value:.2f}" + (f" ± {half:.2f}" if half is not None else "")


def missing(reason: str) -> LengthFit:
    """No fit, and why (a stage with no runtimes against audio seconds)."""
    return LengthFit(None, 0, 0, reason=reason)


def fit(
    seconds: Sequence[float],
    runtime_s: Sequence[float],
    audio: str | None = "input",
    padded_to_s: float | None = None,
) -> LengthFit:
    """Fit runtimes (seconds) against audio lengths (seconds), one point per sample; ``padded_to_s``: the stage pads
    every input to this length (no fit: its cost is constant by design)."""
    if len(seconds) != len(runtime_s):
        raise ValueError(f"{len(seconds)} lengths for {len(runtime_s)} runtimes")
    pairs = [(x, y) for x, y in zip(seconds, runtime_s) if x is not None and y is not None]
    distinct = len({round(x, 6) for x, _ in pairs})
    base = functools.partial(LengthFit, audio, len(pairs), distinct)
    if audio is None:
        return base(reason="this stage's role has no audio side (neither input nor output speech)")
    if padded_to_s is not None:
        return base(
            padded_to_s=padded_to_s,
            reason=f"every input is padded to {padded_to_s:g} s, so the clip's length does not set the cost of a "
            "forward (what varies is the decoding)",
        )
    if distinct < MIN_DISTINCT_LENGTHS:
        return base(
            reason=f"{distinct} distinct audio length(s), a fit needs at least {MIN_DISTINCT_LENGTHS}",
        )
    x = np.asarray([p[0] for p in pairs], dtype=np.float64)
    y_ms = np.asarray([p[1] for p in pairs], dtype=np.float64) * 1e3
    if not (np.all(x > 0) and np.all(y_ms > 0)):
        return base(reason="a length or runtime is 0")
    span = float(x.max() / x.min())
    if span < MIN_SPAN:
        return base(
            reason=f"the lengths span {x.min():.2f} to {x.max():.2f} s ({span:.2f}x); a fit needs the longest at "
            f"least {MIN_SPAN:g}x the shortest",
        )
    from scipy import stats  # scipy is slow to import; only the fit needs it

    line = stats.linregress(x, y_ms)
    t = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(x) - 2))
    slope, fixed = float(line.slope), float(line.intercept)
    slope_ci, fixed_ci = t * float(line.stderr), t * float(line.intercept_stderr)
    fitted = functools.partial(
        base, ms_per_audio_s=slope, fixed_ms=fixed, ms_per_audio_s_ci=slope_ci, fixed_ms_ci=fixed_ci
    )
    per_s = f"{_pm(slope, slope_ci)} ms per audio-second"
    if abs(slope) <= slope_ci:
        return fitted(
            reason=f"no cost per audio-second measurable: {per_s}, its {CONFIDENCE:.0%} interval includes 0 "
            "(the runtimes vary, but not with the clip's length)",
        )
    if slope < 0:
        return fitted(
            reason=f"the runtime falls as the audio grows ({per_s}): not a cost of length; something else sets "
            "these runtimes (the number of decoded tokens, the machine's load)",
        )
    loglog = stats.linregress(np.log(x), np.log(y_ms))
    sigma = float(loglog.stderr) if len(pairs) > 2 and math.isfinite(loglog.stderr) else None
    exponent = float(loglog.slope)
    note = None
    if sigma is not None and exponent - CLEARLY_ABOVE_SIGMAS * sigma > 1:
        note = (
            f"cost grows faster than the audio: exponent {exponent:.2f} ± {sigma:.2f} is more than "
            f"{CLEARLY_ABOVE_SIGMAS:g} standard errors above 1"
        )
    elif fixed + fixed_ci < 0:  # a cost growing faster than the audio bends the line below 0
        return fitted(
            reason=f"the fixed cost is below 0 ({_pm(fixed, fixed_ci)} ms): the runtimes do not lie "
            "on a line through a real cost",
        )
    return fitted(exponent=exponent, exponent_sigma=sigma, note=note)


def to_json(result: LengthFit) -> dict:
    return attrs.asdict(result)
