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

from speechperf.launch.result import RunResult
from speechperf.meters.parity import OutputDiff, compare_outputs


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
