"""The cells of a comparison: backend x threads x a parameter sweep, each measured by ``speechperf bench`` runs.

A cell is everything one child process needs: the backend, the thread count and the config (a file, or a merged
config dict written to a file in the work folder) with its command-line overrides. ``--sweep KEY=V1,V2`` varies one
config key: ``preset`` (every stage's size preset), a general key (``dataset_size``), a stage key (``beam``, set on
every stage) or ``SECTION.KEY``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import SpeechperfError
from speechperf.values import split_items


class PlanError(SpeechperfError):
    """A list of backends, threads or sweep values that cannot be used."""


@attrs.frozen
class Cell:
    """One thing measured: ``label`` names it in every table ("onnxruntime", "torch t=2", "paddle preset=base")."""

    label: str
    backend: str
    threads: int = 1
    config: Path | dict[str, Any] | None = None  # a YAML file, a merged config dict, or None for the built-in default
    preset: str | None = None
    sets: tuple[str, ...] = ()  # --set SECTION.KEY=VALUE items
    args: tuple[str, ...] = ()  # any other bench options, e.g. ("--warmup", "1")
    params: tuple[tuple[str, str], ...] = ()  # the sweep values of this cell, for tables

    @property
    def group(self) -> tuple:
        """Cells with the same threads and sweep values differ only by backend: they are ranked against each other."""
        return (self.threads, self.params)

    @property
    def slug(self) -> str:
        """The label as a folder name."""
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.label)

    def config_file(self, workdir: Path) -> Path:
        """Where a merged config dict is written for the children: ``<workdir>/<cell>.config.yaml``."""
        return Path(workdir) / f"{self.slug}.config.yaml"

    def write_config(self, workdir: Path) -> None:
        """Write a merged config dict to ``config_file``, atomically; the launcher calls it once per cell before any
        child runs, so no child (``--jobs N`` run them at once) ever reads a file being rewritten."""
        if isinstance(self.config, Mapping):
            from speechperf.config import write_config

            write_config(self.config, self.config_file(workdir))

    def bench_args(self, workdir: Path, command: str = "bench") -> list[str]:
        """The ``speechperf bench`` arguments of this cell (without --output / --save-outputs); a merged config
        dict is read from ``config_file`` (``write_config`` writes it). ``command``: ``loadgen`` for
        ``compare --scenario``, whose children take the same options."""
        args = [command, "--backend", self.backend, "--threads", str(self.threads)]
        args.append("--no-store")  # the compare run is stored once, as a whole, by the parent (speechperf.exports)
        if isinstance(self.config, Mapping):
            args += ["--config", str(self.config_file(workdir))]
        elif self.config is not None:
            args += ["--config", str(Path(self.config).resolve())]
        if self.preset is not None:
            args += ["--preset", self.preset]
        for item in self.sets:
            args += ["--set", item]
        return args + list(self.args)


def split_list(text: str, what: str) -> list[str]:
    """``"a,b, c"`` -> ["a", "b", "c"] (``speechperf.values.split_items``, the parser of every comma list); an empty
    item or a repeated one is an error naming ``what``."""
    items = list(split_items(text, what))
    if not items:
        raise PlanError(f"{what} = {text!r}: an empty item; expected a comma-separated list such as a,b")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise PlanError(f"{what} {text!r}: {', '.join(repeated)} is given more than once")
    return items


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
