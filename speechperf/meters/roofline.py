"""Where a stage sits under the machine's roofs: achieved GFLOP/s, % of the compute roof, arithmetic intensity and
the roof that binds (docs/architecture.md, "Metrics").

An estimate from analytic counts, labelled so everywhere it is shown:

- **achieved** = the stage's analytic FLOPs over its runtime, summed over the samples that have both (each sample's
  runtime is its median over the repeats), so long samples weigh as much as their work;
- **% of peak** = achieved over the compute roof measured here at the run's thread count
  (``speechperf.meters.roofs``);
- **traffic** is a lower bound on the bytes moved: per session call, the feeds read, the outputs written and the
  weights read once (``Session.parameter_bytes``); caches can only make the real traffic to memory smaller for
  weights reused across calls, so the intensity is an upper bound where weights stay in cache;
- **intensity** = FLOPs / traffic; below the ridge point (compute roof / bandwidth) the memory roof binds. Where a
  session cannot tell its weights' bytes (``Session.parameter_bytes`` is None), no intensity or bound is shown.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from speechperf.meters.flops import FlopCount
from speechperf.meters.roofs import Roofs, cached
from speechperf.results.figures import ROOFLINE_COLUMNS

LABEL = "estimate from analytic FLOPs over the median runtime, against roofs measured on this machine"


@attrs.frozen
class Placement:
    """A stage's (or a cascade's) place under the roofs."""

    gflops_per_s: float
    fraction_of_peak: float | None  # of the fp32 compute roof at this thread count
    traffic_mib_per_sample: float | None  # the lower bound, mean over the samples
    intensity: float | None  # FLOPs per byte of that bound
    bound: str | None  # "compute" or "memory"
    fraction_of_attainable: float | None  # of min(compute roof, intensity * bandwidth)
    parameters_known: bool = True  # False: the traffic bound has feeds and outputs only


def place(
    flops: Mapping[str, int],
    seconds: Mapping[str, float],
    traffic: Mapping[str, int],
    roofs: Roofs | None,
    parameters_known: bool = True,
) -> Placement | None:
    """The placement of per-sample ``flops`` done in per-sample ``seconds`` moving at least ``traffic`` bytes;
    None when no sample has both a count and a runtime."""
    both = [k for k in flops if k in seconds and seconds[k] > 0]
    if not both:
        return None
    work = sum(flops[k] for k in both)
    time_s = sum(seconds[k] for k in both)
    achieved = work / time_s / 1e9
    peak = roofs.peak if roofs is not None else None
    # Without every session's weights the bound holds the feeds and outputs only: on one backend and not on
    # another that would put the same model on different sides of the ridge, so no intensity is claimed.
    moved = [traffic[k] for k in both if k in traffic] if parameters_known else []
    intensity = work / sum(moved) if moved and len(moved) == len(both) and sum(moved) > 0 else None
    bound = attainable = None
    if intensity is not None and roofs is not None and roofs.ridge is not None and peak and roofs.memory:
        bound = "memory" if intensity < roofs.ridge else "compute"
        attainable = min(peak.value, intensity * roofs.memory.value)
    return Placement(
        gflops_per_s=achieved,
        fraction_of_peak=achieved / peak.value if peak else None,
        traffic_mib_per_sample=sum(moved) / len(moved) / (1 << 20) if intensity is not None else None,
        intensity=intensity,
        bound=bound,
        fraction_of_attainable=achieved / attainable if attainable else None,
        parameters_known=parameters_known,
    )


def place_count(count: FlopCount | None, seconds: Mapping[str, float], roofs: Roofs | None) -> Placement | None:
    if count is None or not count.per_sample or count.source != "analytic":
        return None
    return place(count.per_sample, seconds, count.traffic_per_sample, roofs, count.parameters_known)


def columns(placement: Placement | None) -> dict[str, object]:
    """The roofline's columns of a report row (JSON summary, CSV, Markdown)."""

    def r(value, digits):
        return None if value is None else round(value, digits)

    if placement is None:
        return dict.fromkeys(COLUMNS)
    return {
        "gflops_per_s": r(placement.gflops_per_s, 2),
        "fraction_of_peak": r(placement.fraction_of_peak, 3),
        "traffic_mib_per_sample": r(placement.traffic_mib_per_sample, 3),
        "arithmetic_intensity": r(placement.intensity, 2),
        "roof_bound": placement.bound,
        "fraction_of_attainable": r(placement.fraction_of_attainable, 3),
    }


COLUMNS = ROOFLINE_COLUMNS


def describe(roofs: Roofs | None, threads: int) -> str:
    """One line that says what the roofline columns are measured against."""
    if roofs is None or roofs.peak is None:
        untrusted = cached(threads)
        if untrusted is not None and untrusted.busy:  # says how busy, and to measure again
            return f"roofline: {untrusted.busy}; GFLOP/s are shown without a % of peak"
        return (
            f"roofline: no roofs measured here at {threads} thread(s) (run `speechperf check --meters roofline "
            f"--threads {threads}`); GFLOP/s are shown without a % of peak"
        )
    memory = f", memory {roofs.memory.value:.1f} GB/s" if roofs.memory else ""
    return (
        f"roofline ({LABEL}): compute roof {roofs.peak.value:.1f} GFLOP/s ({roofs.peak.source} GEMM) at "
        f"{threads} thread(s){memory}; traffic is a lower bound (weights read once per call, feeds and outputs)"
    )
