"""A cell: one thing measured in fresh child processes, and everything its child needs.

A cell is the backend, the thread count and the config (a file, or a merged config dict written to a file in the
work folder) with its command-line overrides; ``bench_args`` is the ``speechperf bench`` (or ``loadgen``) command
line of its children. compare makes its cells from backends x threads x a sweep (``speechperf.compare.plan``),
optimize one per variant, tune one per candidate, ``bench --runs`` one for its config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs


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
