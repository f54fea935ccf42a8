"""Every stage's output per sample, saved to a ``.npz`` so that runs on different backends can be compared.

``speechperf bench --save-outputs FILE.npz`` writes it; ``speechperf compare`` reads it for its parity check. The
file holds only numeric arrays and is read with ``allow_pickle=False``, so loading one never runs code. Keys are
``stage{N}/{sample id}/{name}``: ``tokens``, ``units``, ``waveform``, ``sample_rate``, ``segments`` (an (n, 2) array
of start and end seconds) and, for a user's own model file, ``outputs.{output name}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from speechperf.outputs import atomic_path

SEPARATOR = "/"


def flatten_output(out: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The numeric arrays of one stage output, by name; anything that is not numeric is left out."""
    arrays: dict[str, np.ndarray] = {}
    for key, value in out.items():
        if key == "outputs" and isinstance(value, Mapping):
            for name, array in value.items():
                arrays[f"outputs.{name}"] = np.asarray(array)
            continue
        if key == "segments":
            value = np.asarray([[float(a), float(b)] for a, b in value], dtype=np.float64).reshape(-1, 2)
        array = np.asarray(value)
        if array.dtype.kind in "biuf":
            arrays[key] = array
    return arrays


def save_stage_outputs(path: Path, stages: Sequence[Mapping[str, Mapping[str, Any]]]) -> None:
    """``stages[i]`` maps sample id -> that stage's output; written atomically (a temporary file renamed)."""
    arrays = {}
    for index, outputs in enumerate(stages, 1):
        for sid, out in outputs.items():
            for name, array in flatten_output(out).items():
                arrays[SEPARATOR.join((f"stage{index}", str(sid), name))] = array
    with atomic_path(path, "--save-outputs") as tmp, open(tmp, "wb") as handle:
        # mypy also matches **arrays against savez's `allow_pickle: bool`; the keys are output names.
        np.savez(handle, **arrays)  # type: ignore[arg-type]


def load_stage_outputs(path: str | Path) -> dict[tuple[str, str, str], np.ndarray]:
    """(stage, sample id, name) -> array, from a file written by ``save_stage_outputs``."""
    loaded = {}
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            stage, rest = key.split(SEPARATOR, 1)
            sid, name = rest.rsplit(SEPARATOR, 1)
            loaded[(stage, sid, name)] = data[key]
    return loaded
