"""Every statistic speechperf reports, and how it is written: summaries of timings, speed ratios, significance.

Used by ``speechperf bench`` (the per-stage summary), ``compare`` (backend against backend) and ``optimize`` (int8
against fp32). The caller chooses the statistical unit; compare and optimize use one value per independent process
run, so that drift between runs counts as noise instead of being averaged away inside one process.

Definitions, as hyperfine prints them:

- sigma (σ) is the sample standard deviation (n-1). It is undefined for fewer than 2 values: ``stdev`` gives None,
  the JSON holds null, CSV an empty field, and the tables show the mean alone (never "± 0.00").
- ``mean_sigma`` writes "mean ± σ" and ``ratio_text`` writes a ratio "value ± σ", with 2 decimals, from the
  unrounded values: the sentences and the tables of one report cannot disagree in the last digit.

- ratio: ``mean(slow) / mean(fast)``, "fast ran 2.31 ± 0.12 times faster than slow".
- its sigma, by first-order error propagation of the two standard deviations:
  ``ratio * sqrt((s_fast / m_fast)**2 + (s_slow / m_slow)**2)``; s is the sample standard deviation (n-1).
- p-value: Welch's two-sided t-test (unequal variances, ``scipy.stats.ttest_ind(equal_var=False)``); a difference
  with p >= 0.05 is reported as "not significant".
- the gate's lower bound (``ratio_lower_bound``): the one-sided 95% lower confidence bound of ``mean(new) /
  mean(base)`` over process runs, on the log scale: ``ratio * exp(-t * se)`` with
  ``se**2 = s_base**2 / (n_base * m_base**2) + s_new**2 / (n_new * m_new**2) + 2 * drift**2`` (first-order, each
  side's relative standard error of its mean, plus a between-session drift ``drift`` per side: the runs of one side
  run back to back, so their spread cannot see how far the machine moves between the two sessions) and ``t`` the
  Student quantile at the Welch-Satterthwaite degrees of freedom of the two estimated terms (the drift, a fixed
  figure, adds none).
- outliers: the modified z-score of Iglewicz and Hoaglin, ``0.6745 * (x - median) / MAD``, above 3.5.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

#: a difference with Welch's p below this is significant
SIGNIFICANCE = 0.05
#: the one-sided confidence of the gate's lower bound (``ratio_lower_bound``): its false-alarm rate at the threshold
GATE_CONFIDENCE = 0.95
OUTLIER_Z = 3.5
_MAD_TO_Z = 0.6745  # the 0.75 quantile of the standard normal: makes the MAD comparable with a standard deviation
PERCENTILE_METHOD = "linear interpolation between closest ranks (numpy 'linear', Hyndman-Fan type 7)"
DIGITS = 2  # decimals of every "mean ± σ" and ratio a table or sentence shows


def mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if len(values) else None


def stdev(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n-1); None for fewer than 2 values, where it is undefined."""
    return statistics.stdev(values) if len(values) > 1 else None


def mean_sigma(mean: float | None, sigma: float | None, unit: str = "", digits: int = DIGITS) -> str:
    """``12.34 ± 0.56 ms``; the mean alone when sigma is None; ``-`` when there is no mean."""
    if mean is None:
        return "-"
    suffix = f" {unit}" if unit else ""
    if sigma is None:
        return f"{mean:.{digits}f}{suffix}"
    return f"{mean:.{digits}f}{suffix} ± {sigma:.{digits}f}{suffix}"


def p_text(p_value: float) -> str:
    """``p = 0.0012``: two significant digits."""
    return f"p = {p_value:.2g}"


@attrs.frozen
class Stats:
    """Summary of values (seconds, for timings). ``stdev`` is None for one value; ``percentile_method`` names how
    p50/p90/p99 were computed."""

    count: int
    mean: float
    median: float
    stdev: float | None
    min: float
    max: float
    p50: float
    p90: float
    p99: float
    percentile_method: str = PERCENTILE_METHOD

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats | None:
        if not values:
            return None
        p50, p90, p99 = np.percentile(np.asarray(values, dtype=np.float64), [50, 90, 99], method="linear")
        return cls(
            count=len(values),
            mean=statistics.fmean(values),
            median=statistics.median(values),
            stdev=stdev(values),
            min=min(values),
            max=max(values),
            p50=float(p50),
            p90=float(p90),
            p99=float(p99),
        )


@attrs.frozen
class Ratio:
    """``value`` times faster, ± ``sigma`` (None when either side has fewer than 2 values)."""

    value: float
    sigma: float | None

    def text(self) -> str:
        """``1.69 ± 0.28`` (2 decimals of the unrounded values); the value alone when sigma is None."""
        return mean_sigma(self.value, self.sigma)


@attrs.frozen
class Comparison:
    """``fast`` against ``slow``: the speed ratio, Welch's p-value and whether the difference is significant."""

    fast: str
    slow: str
    ratio: Ratio
    p_value: float | None

    @property
    def significant(self) -> bool | None:
        """None when no test could be made (fewer than 2 values on a side, or no variance at all)."""
        return None if self.p_value is None else self.p_value < SIGNIFICANCE

    def sentence(self) -> str:
        """``onnxruntime ran 2.31 ± 0.12 times faster than torch (p = 0.001)``."""
        text = f"{self.fast} ran {self.ratio.text()} times faster than {self.slow}"
        if self.p_value is None:
            return text + " (no significance test: fewer than 2 runs on a side)"
        if not self.significant:
            return text + f" (not significant, {p_text(self.p_value)})"
        return text + f" ({p_text(self.p_value)})"


def speed_ratio(fast: Sequence[float], slow: Sequence[float]) -> Ratio:
    """How many times faster ``fast`` is than ``slow`` (ratio of means), with the propagated sigma."""
    _require_values(fast, "fast")
    _require_values(slow, "slow")
    m_fast, m_slow = statistics.fmean(fast), statistics.fmean(slow)
    if m_fast <= 0:
        raise ValueError(f"mean of the fast timings must be positive, got {m_fast}")
    value = m_slow / m_fast
    if len(fast) < 2 or len(slow) < 2:
        return Ratio(value, None)
    rel_fast = statistics.stdev(fast) / m_fast
    rel_slow = statistics.stdev(slow) / m_slow if m_slow > 0 else 0.0  # both have 2 values or more here
    return Ratio(value, value * math.sqrt(rel_fast**2 + rel_slow**2))


def welch_p_value(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t-test; None with fewer than 2 values on a side or zero variance on both."""
    if len(a) < 2 or len(b) < 2:
        return None
    if statistics.variance(a) == 0 and statistics.variance(b) == 0:
        return None
    from scipy.stats import ttest_ind  # scipy is slow to import; only comparisons need it

    return float(ttest_ind(a, b, equal_var=False).pvalue)


@attrs.frozen
class Bound:
    """``mean(new) / mean(base)`` and its lower confidence bound (``ratio_lower_bound``)."""

    ratio: float
    low: float
    se_log: float  #: the standard error of log(ratio), drift included
    df: float  #: Welch-Satterthwaite degrees of freedom (inf when only the drift is uncertain)

    @property
    def factor(self) -> float:
        """``low / ratio``: the bound's distance below the ratio, applied to another figure of the same runs."""
        return self.low / self.ratio


def ratio_lower_bound(
    base: Sequence[float], new: Sequence[float], drift: float = 0.0, confidence: float = GATE_CONFIDENCE
) -> Bound | None:
    """The one-sided lower confidence bound of ``mean(new) / mean(base)`` (see the module's doc); None with fewer
    than 2 values on a side, a mean that is not positive, or nothing uncertain at all (no spread, no drift)."""
    if len(base) < 2 or len(new) < 2:
        return None
    m_base, m_new = statistics.fmean(base), statistics.fmean(new)
    if m_base <= 0 or m_new <= 0:
        return None
    a = statistics.variance(base) / (len(base) * m_base**2)
    b = statistics.variance(new) / (len(new) * m_new**2)
    var = a + b + 2 * drift**2
    if var == 0:
        return None
    estimated = a**2 / (len(base) - 1) + b**2 / (len(new) - 1)
    df = var**2 / estimated if estimated > 0 else math.inf
    from scipy.stats import t  # scipy is slow to import; only comparisons need it

    ratio, se = m_new / m_base, math.sqrt(var)
    return Bound(ratio, ratio * math.exp(-float(t.ppf(confidence, df)) * se), se, df)


def compare(fast_name: str, fast: Sequence[float], slow_name: str, slow: Sequence[float]) -> Comparison:
    return Comparison(fast_name, slow_name, speed_ratio(fast, slow), welch_p_value(fast, slow))


def rank(groups: Mapping[str, Sequence[float]]) -> list[Comparison]:
    """Order the groups by mean, fastest first, and compare the fastest with each of the others."""
    if not groups:
        return []
    ordered = sorted(groups, key=lambda name: statistics.fmean(groups[name]))
    best = ordered[0]
    return [compare(best, groups[best], other, groups[other]) for other in ordered[1:]]


def outliers(values: Sequence[float], threshold: float = OUTLIER_Z, min_relative: float = 0.0) -> list[int]:
    """Indices of values whose modified z-score exceeds ``threshold``; none when the MAD is 0.

    ``min_relative``: also require the value to be that fraction of the median away from it. Very steady values have
    a tiny MAD, and then a 5% deviation scores far above 3.5 without meaning anything went wrong.
    """
    if len(values) < 3:
        return []
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    if mad == 0:
        return []
    return [
        i
        for i, v in enumerate(values)
        if abs(_MAD_TO_Z * (v - median) / mad) > threshold and abs(v - median) > min_relative * abs(median)
    ]


def outlier_warning(values: Sequence[float], what: str, min_relative: float = 0.0) -> str | None:
    """A one-line warning when ``values`` hold outliers, or None."""
    found = outliers(values, min_relative=min_relative)
    if not found:
        return None
    away = f" and more than {min_relative:.0%} from the median" if min_relative else ""
    return (
        f"{what}: {len(found)} of {len(values)} values are outliers (modified z-score > {OUTLIER_Z}{away}); "
        "another process may have interfered: close other programs and rerun with more --runs"
    )


def _require_values(values: Sequence[float], what: str) -> None:
    if len(values) == 0:
        raise ValueError(f"no {what} timings to compare")
