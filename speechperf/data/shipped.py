"""Where the shipped configs and their data files (the smoke sets) are: the repository's top-level ``configs/`` in a
source checkout, ``speechperf/configs/`` in an installed wheel (pyproject.toml maps the one onto the other as
package data, so the files live once in git)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # the speechperf package's folder


def folder() -> Path:
    """The folder holding the shipped ``*.yaml`` configs and their ``data/``."""
    installed = _PACKAGE / "configs"
    return installed if installed.is_dir() else _PACKAGE.parent / "configs"
