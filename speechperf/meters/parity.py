"""Do two runs' outputs agree? Each output of each sample against the reference's: token and unit sequences and VAD
segments must be identical; float outputs get max absolute and relative difference, SNR and cosine similarity
(speechperf.meters.fidelity), and a sample differs when one of them is past its tolerance or the shapes differ.
compare's cells (speechperf.compare.parity) and loadgen's dynamic batching against batch 1
(speechperf.loadgen.stages) both judge by it.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from speechperf.meters.fidelity import FloatMeter, tolerance_for

EXACT_NAMES = ("segments",)  # float arrays that must still match exactly


@attrs.frozen
class OutputDiff:
    """One output (``stage1 tokens``) of a cell against the reference, over the samples of the compared runs."""

    stage: str
    name: str
    exact: bool
    samples: int
    differing: int  # samples whose output is not identical (exact) or past the tolerance / of another shape (float)
    max_abs: float | None  # float outputs of equal shapes
    max_rel: float | None = None
    snr_db: float | None = None
    cosine: float | None = None

    def describe(self) -> str:
        what = f"{self.stage} {self.name}"
        if self.exact:
            state = "identical" if not self.differing else f"DIFFER in {self.differing}/{self.samples} samples"
            return f"{what} {state}"
        delta = "shapes differ"
        if self.max_abs is not None:
            from speechperf.meters.fidelity import FloatFidelity

            delta = FloatFidelity(
                self.samples, self.differing, self.max_abs, self.max_rel, self.snr_db, self.cosine
            ).describe()
        return f"{what} {delta}" + (f" (DIFFER in {self.differing}/{self.samples} samples)" if self.differing else "")


def compare_outputs(
    reference: Mapping[tuple, np.ndarray],
    other: Mapping[tuple, np.ndarray],
    tolerances: Mapping[str, Mapping] | None = None,
) -> list[OutputDiff]:
    """Per (stage, name): how many samples differ, and the float figures of float outputs. ``tolerances`` maps a
    stage (``stage1``) to its ``tolerance`` key."""
    merged: dict[tuple[str, str], dict] = {}
    for key in sorted(set(reference) | set(other)):
        stage, _, name = key
        ref, got = reference.get(key), other.get(key)
        ref_arr = None if ref is None else np.asarray(ref)
        exact = name in EXACT_NAMES or (ref_arr is not None and ref_arr.dtype.kind in "biu")
        entry = merged.setdefault((stage, name), {"exact": exact, "samples": 0, "differing": 0})
        got_arr = None if got is None else np.asarray(got)
        if not exact:
            if "meter" not in entry:
                entry["meter"] = FloatMeter(tolerance_for((tolerances or {}).get(stage), name))
            entry["meter"].add(ref_arr, got_arr)
            continue
        entry["samples"] += 1
        same = (
            ref_arr is not None
            and got_arr is not None
            and ref_arr.shape == got_arr.shape
            and np.array_equal(ref_arr, got_arr)
        )
        entry["differing"] += int(not same)
    diffs = []
    for (stage, name), e in merged.items():
        if e["exact"]:
            diffs.append(OutputDiff(stage, name, True, e["samples"], e["differing"], None))
            continue
        fid = e["meter"].result()
        whole = fid.shapes_differ == 0
        diffs.append(
            OutputDiff(
                stage,
                name,
                False,
                fid.samples,
                fid.differing,
                fid.max_abs if whole else None,
                fid.max_rel if whole else None,
                fid.snr_db if whole else None,
                fid.cosine if whole else None,
            )
        )
    return diffs
