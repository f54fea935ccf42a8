"""Run import-linter (``lint-imports``) on speechperf as it installs: ``python tools/lint_imports.py``.

The contracts are in pyproject.toml (``[tool.importlinter]``) and name modules as they install:
``speechperf.backends.*`` and ``speechperf.adapters.*``. Those folders sit at the top of the repo (a package-dir
mapping), and import-linter finds a package's modules by walking its folder, so a plain ``lint-imports`` would see
neither. This script builds a view of the installed layout (a temporary ``speechperf/`` of symlinks to the repo's
files, with ``backends/`` and ``adapters/`` linked in) and runs import-linter on it. Extra arguments go to
``lint-imports`` (``--verbose``, ``--contract ID``, ...); ``--view DIR`` lints a view built already
(tests/test_layering.py builds one with a broken rule to see the contracts fail).
"""

from __future__ import annotations

import os
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mapped_folders(root: Path = ROOT) -> dict[str, Path]:
    """Subpackage of speechperf -> the repo folder it installs from (pyproject.toml's package-dir mapping)."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name.removeprefix("speechperf."): root / folder for name, folder in mapping.items() if "." in name}


def build_view(into: Path, root: Path = ROOT) -> Path:
    """A folder holding ``speechperf/`` as it installs, every entry a symlink into ``root``; returns the folder."""
    package = Path(into) / "speechperf"
    package.mkdir(parents=True)
    for entry in sorted((root / "speechperf").iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in mapped_folders(root).items():
        (package / name).symlink_to(folder)
    return Path(into)


def lint(view: Path, args: list[str]) -> int:
    """import-linter's exit status over ``view`` with the repo's contracts."""
    from importlinter import cli

    here = os.getcwd()
    os.chdir(view)  # lint-imports puts the working folder first on sys.path: the view's speechperf is found
    try:
        cli.lint_imports_command.main([str(ROOT / "pyproject.toml"), "--no-cache", *args])
    except SystemExit as done:  # lint-imports always ends with sys.exit(status)
        return done.code if isinstance(done.code, int) else 1
    finally:
        os.chdir(here)


def main(argv: list[str]) -> int:
    if "--view" in argv:
        at = argv.index("--view")
        return lint(Path(argv[at + 1]), argv[:at] + argv[at + 2 :])
    with tempfile.TemporaryDirectory(prefix="speechperf-lint-") as tmp:
        return lint(build_view(Path(tmp)), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
