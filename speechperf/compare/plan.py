"""The cells of a comparison: backend x threads x a parameter sweep, each measured by ``speechperf bench`` runs.

A cell (``speechperf.launch.cell.Cell``) is everything one child process needs. ``--sweep KEY=V1,V2`` varies one
config key: ``preset`` (every stage's size preset), a general key (``dataset_size``), a stage key (``beam``, set on
every stage) or ``SECTION.KEY``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speechperf.launch.cell import Cell
from speechperf.launch.lists import PlanError, split_list


def parse_sweep(item: str) -> tuple[str, list[str]]:
    """``preset=tiny,base`` -> ("preset", ["tiny", "base"])."""
    key, sep, values = item.partition("=")
    if not sep or not key.strip():
        raise PlanError(f"--sweep {item!r}: expected KEY=V1,V2, e.g. preset=tiny,base or stage1.beam=1,4")
    return key.strip(), split_list(values, f"--sweep {key.strip()}")


def sweep_sets(key: str, value: str, stage_count: int) -> tuple[str | None, tuple[str, ...]]:
    """(preset, --set items) that give config key ``key`` the value ``value``."""
    from speechperf.config.schema import GENERAL_KEYS, STAGE_KEYS

    if key == "preset":
        return value, ()
    if "." in key:
        return None, (f"{key}={value}",)
    if key in ("threads", "backend"):
        raise PlanError(
            f"--sweep {key}: use --{key}s / --threads for that"
            if key == "backend"
            else f"--sweep {key}: use --threads 1,2 for that"
        )
    if key in GENERAL_KEYS:
        return None, (f"general.{key}={value}",)
    if key in STAGE_KEYS:
        return None, tuple(f"stage{i}.{key}={value}" for i in range(1, stage_count + 1))
    raise PlanError(
        f"--sweep {key}: not a config key; allowed: preset, a general key ({', '.join(GENERAL_KEYS)}), "
        f"a stage key ({', '.join(STAGE_KEYS)}) or SECTION.KEY"
    )


def build_cells(
    backends: Sequence[str],
    threads: Sequence[int],
    sweeps: Sequence[tuple[str, list[str]]],
    *,
    config: Path | dict[str, Any] | None = None,
    preset: str | None = None,
    sets: Sequence[str] = (),
    args: Sequence[str] = (),
    stage_count: int = 1,
) -> list[Cell]:
    """Every combination, sweep values outermost, then threads, then backends (the order of the tables)."""
    keys = [key for key, _ in sweeps]
    if len(set(keys)) != len(keys):
        raise PlanError(f"--sweep: key {next(k for k in keys if keys.count(k) > 1)!r} is swept twice")
    if preset is not None and "preset" in keys:
        raise PlanError("--preset and --sweep preset=... both given; keep one")
    cells = []
    for values in itertools.product(*(vals for _, vals in sweeps)):
        params = tuple(zip(keys, values))
        cell_preset, cell_sets = preset, tuple(sets)
        for key, value in params:
            swept_preset, extra = sweep_sets(key, value, stage_count)
            cell_preset = swept_preset or cell_preset
            cell_sets += extra
        for n in threads:
            for backend in backends:
                label = " ".join([backend, *([f"t={n}"] if len(threads) > 1 else []), *(f"{k}={v}" for k, v in params)])
                cells.append(Cell(label, backend, n, config, cell_preset, cell_sets, tuple(args), params))
    return cells
