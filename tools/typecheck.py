"""Run mypy on speechperf as it installs: ``python tools/typecheck.py``.

backends/ and adapters/ sit at the top of the repo and install as ``speechperf.backends`` and
``speechperf.adapters`` (a package-dir mapping). mypy maps files to modules by their folders and does not follow
setuptools' editable finder, so a plain ``mypy`` at the repo root would check neither and could not resolve the
core's imports of them. This script runs mypy (configuration in pyproject.toml ``[tool.mypy]``) on the same
installed-layout view of symlinks that tools/lint_imports.py builds, so every file is checked under its real module
name, and prints the paths back as repo paths (``backends/torch/session.py``, not ``speechperf/backends/...``).
Extra arguments go to mypy; ``--view DIR`` checks a view built already (tests/test_types.py plants an error in one).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from lint_imports import ROOT, build_view, mapped_folders


def repo_paths(text: str, root: Path = ROOT) -> str:
    """mypy's output with the view's ``speechperf/<mapped>/`` paths written as the repo folders they link to."""
    for name, folder in mapped_folders(root).items():
        text = text.replace(f"speechperf/{name}/", f"{folder.relative_to(root)}/")
    return text


def typecheck(view: Path, args: list[str]) -> int:
    """mypy's exit status over ``view`` with the repo's configuration; its output printed with repo paths."""
    done = subprocess.run(
        # The cache stays in the repo (the view is temporary), so a second run only rechecks what changed; a folder
        # of its own, as a bare `mypy` at the root resolves speechperf.backends and .adapters differently (not at all).
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
        + ["--cache-dir", str(ROOT / ".mypy_cache" / "installed"), *args],
        cwd=view,  # mypy searches the working folder first: the view's speechperf is found, and `files` is in it
        capture_output=True,
        text=True,
    )
    sys.stdout.write(repo_paths(done.stdout))
    sys.stderr.write(repo_paths(done.stderr))
    return done.returncode


def main(argv: list[str]) -> int:
    if "--view" in argv:
        at = argv.index("--view")
        return typecheck(Path(argv[at + 1]), argv[:at] + argv[at + 2 :])
    with tempfile.TemporaryDirectory(prefix="speechperf-mypy-") as tmp:
        return typecheck(build_view(Path(tmp)), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
