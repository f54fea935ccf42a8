"""Cells that several kinds' tables show the same way (bench's and compare's): the cost of a first call on a new
input shape and the roofline's place, each from a row of the document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def first_call_cell(row: Mapping[str, Any]) -> str:
    """``+44.2%``, or ``+3.1% (noise)`` when the rule did not call it (``speechperf.meters.first_call``), or ``-``."""
    extra = row.get("first_call_new_shape_extra")
    if extra is None:
        return "-"
    return f"{round(extra, 3):+.1%}" + ("" if row.get("first_call_new_shape_detected") else " (noise)")


def roofline_cell(row: Mapping[str, Any]) -> str:
    """``41.2 (21% of peak, memory-bound)``: the achieved GFLOP/s and where it sits (``speechperf.meters.roofline``),
    or ``-``."""
    if row.get("gflops_per_s") is None:
        return "-"
    extra = []
    if row.get("fraction_of_peak") is not None:
        extra.append(f"{row['fraction_of_peak']:.0%} of peak")
    if row.get("roof_bound"):
        extra.append(f"{row['roof_bound']}-bound")
    text = f"{row['gflops_per_s']:.1f}"
    return f"{text} ({', '.join(extra)})" if extra else text
