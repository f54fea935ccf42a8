"""Do the cells' outputs agree? Every stage output of every sample against the reference cell's, run by run.

The reference of a group (the cells that differ only by backend) is its first cell that finished. Token and unit
sequences, sample rates and VAD segments must be identical; float outputs (waveforms, masks, a model file's
outputs) get max absolute and relative difference, SNR and cosine similarity (speechperf.meters.fidelity), and a
sample differs when one of them is past its tolerance (the stage's ``tolerance`` key, per output) or the shapes
differ. A mismatch is reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from speechperf.launch.result import RunResult
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


def _worst(a: OutputDiff, b: OutputDiff) -> OutputDiff:
    def pick(x, y, worst):
        return None if a.exact or x is None or y is None else worst(x, y)

    return attrs.evolve(
        a,
        samples=max(a.samples, b.samples),
        differing=max(a.differing, b.differing),
        max_abs=pick(a.max_abs, b.max_abs, max),
        max_rel=pick(a.max_rel, b.max_rel, max),
        snr_db=pick(a.snr_db, b.snr_db, min),
        cosine=pick(a.cosine, b.cosine, min),
    )


def group_parity(
    labels: Sequence[str], results: Sequence[RunResult], tolerances: Mapping[str, Mapping] | None = None
) -> dict[str, CellParity]:
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
            for diff in compare_outputs(ref_out, got_out, tolerances):
                key = (diff.stage, diff.name)
                worst[key] = _worst(worst[key], diff) if key in worst else diff
        if label in parity:
            continue
        note = None if worst else f"no run finished on both {label} and the reference {reference}"
        parity[label] = CellParity(label, reference, tuple(worst.values()), note)
    return parity


def batch_parity(
    cells: Sequence, results: Sequence[RunResult], tolerances: Mapping[str, Mapping] | None = None
) -> dict[str, CellParity]:
    """A ``--sweep batch_size=...``: each cell's outputs against those of the cell that differs from it only by its
    batch size, the smallest swept (1 where swept): batching must not change an output (docs/benchmark.md,
    "Batching")."""

    def batch_of(cell) -> int:
        """The cell's swept batch size; -1 when it has none (the config check refuses a non-integer one)."""
        value = str(dict(cell.params).get("batch_size", ""))
        return int(value) if value.isdigit() else -1

    def peers_key(cell) -> tuple:
        return (cell.backend, cell.threads, tuple((k, v) for k, v in cell.params if k != "batch_size"))

    swept = [c for c in cells if batch_of(c) >= 0]
    out: dict[str, CellParity] = {}
    for cell in swept:
        reference = min((c for c in swept if peers_key(c) == peers_key(cell)), key=batch_of)
        if reference is cell:
            continue
        found = group_parity([reference.label, cell.label], results, tolerances).get(cell.label)
        if found is not None:
            out[cell.label] = found
    return out
