"""Do the cells' outputs agree? Every stage output of every sample against the reference cell's, run by run.

The reference of a group (the cells that differ only by backend) is its first cell that finished. Token and unit
sequences, sample rates and VAD segments must be identical; float outputs (waveforms, a model file's outputs) are
reported as the max absolute difference, and called different when it exceeds ``FLOAT_TOLERANCE`` times the
reference's largest magnitude, or when the shapes differ. A mismatch is reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from speechperf.compare.child import RunResult

FLOAT_TOLERANCE = 1e-3
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

    def describe(self) -> str:
        what = f"{self.stage} {self.name}"
        if self.exact:
            state = "identical" if not self.differing else f"DIFFER in {self.differing}/{self.samples} samples"
            return f"{what} {state}"
        delta = f"max |Δ| {self.max_abs:.2g}" if self.max_abs is not None else "shapes differ"
        return f"{what} {delta}" + (f" (DIFFER in {self.differing}/{self.samples} samples)" if self.differing else "")


@attrs.frozen
class CellParity:
    label: str
    reference: str
    diffs: tuple[OutputDiff, ...]
    note: str | None = None  # why nothing could be compared

    @property
    def mismatch(self) -> bool:
        return any(d.differing for d in self.diffs)

    def describe(self) -> str:
        if self.label == self.reference:
            return "reference"
        if self.note:
            return self.note
        return "; ".join(d.describe() for d in self.diffs) or "no outputs saved"


def compare_outputs(reference: Mapping[tuple, np.ndarray], other: Mapping[tuple, np.ndarray]) -> list[OutputDiff]:
    """Per (stage, name): how many samples differ, and the max abs difference of float outputs."""
    merged: dict[tuple[str, str], dict] = {}
    for key in sorted(set(reference) | set(other)):
        stage, _, name = key
        ref, got = reference.get(key), other.get(key)
        ref_arr = None if ref is None else np.asarray(ref)
        exact = name in EXACT_NAMES or (ref_arr is not None and ref_arr.dtype.kind in "biu")
        entry = merged.setdefault((stage, name), {"exact": exact, "samples": 0, "differing": 0, "max_abs": None})
        entry["samples"] += 1
        got_arr = None if got is None else np.asarray(got)
        if ref_arr is None or got_arr is None or ref_arr.shape != got_arr.shape:
            entry["differing"] += 1
            if not exact:
                entry["shape_differs"] = True
            continue
        if exact:
            entry["differing"] += int(not np.array_equal(ref_arr, got_arr))
            continue
        delta = float(np.max(np.abs(ref_arr.astype(np.float64) - got_arr.astype(np.float64)))) if ref_arr.size else 0.0
        scale = float(np.max(np.abs(ref_arr))) if ref_arr.size else 0.0
        entry["max_abs"] = max(entry["max_abs"] or 0.0, delta)
        entry["differing"] += int(delta > FLOAT_TOLERANCE * max(scale, 1e-12))
    return [
        OutputDiff(
            stage, name, e["exact"], e["samples"], e["differing"], None if e.get("shape_differs") else e["max_abs"]
        )
        for (stage, name), e in merged.items()
    ]


def _worst(a: OutputDiff, b: OutputDiff) -> OutputDiff:
    max_abs = None if a.max_abs is None or b.max_abs is None else max(a.max_abs, b.max_abs)
    return attrs.evolve(
        a,
        samples=max(a.samples, b.samples),
        differing=max(a.differing, b.differing),
        max_abs=max_abs if not a.exact else None,
    )


def group_parity(labels: Sequence[str], results: Sequence[RunResult]) -> dict[str, CellParity]:
    """Parity of each cell of one group against the group's reference, the worst over the runs both finished."""
    from speechperf.benchmark.saved_outputs import load_stage_outputs

    ok = {(r.label, r.run): r for r in results if r.ok and r.label in labels}
    finished = [label for label in labels if any(key[0] == label for key in ok)]
    if not finished:
        return {}
    reference = finished[0]
    parity = {reference: CellParity(reference, reference, ())}
    cache: dict[str, dict | None] = {}  # None: the file cannot be read

    def outputs(result: RunResult):
        if result.outputs_path not in cache:
            try:
                cache[result.outputs_path] = load_stage_outputs(result.outputs_path)
            except (OSError, ValueError, KeyError):  # missing or not a file --save-outputs wrote
                cache[result.outputs_path] = None
        return cache[result.outputs_path]

    for label in finished[1:]:
        worst: dict[tuple[str, str], OutputDiff] = {}
        for (other_label, run), result in ok.items():
            if other_label != label or (reference, run) not in ok:
                continue
            ref_out, got_out = outputs(ok[(reference, run)]), outputs(result)
            if ref_out is None or got_out is None:
                unreadable = ok[(reference, run)] if ref_out is None else result
                parity[label] = CellParity(label, reference, (), f"outputs unreadable: {unreadable.outputs_path}")
                break
            for diff in compare_outputs(ref_out, got_out):
                key = (diff.stage, diff.name)
                worst[key] = _worst(worst[key], diff) if key in worst else diff
        if label in parity:
            continue
        note = None if worst else f"no run finished on both {label} and the reference {reference}"
        parity[label] = CellParity(label, reference, tuple(worst.values()), note)
    return parity
