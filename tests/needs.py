"""What some tests need from the machine besides Python packages: the programs espeak-ng, sox and chromium, and the
LibriVox clips of pocketsphinx-testdata. A test that needs one is marked ``@needs("espeak-ng", "sox")`` (or calls
``require(...)``) and skips when it is missing, naming what is missing and the apt-get command; ``.ci/run``
installs them all (README: "The few tests that use them skip, saying so, when they are missing")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")

#: Each program a test may run: the names it goes by on PATH, and its Debian package.
PROGRAMS = {
    "espeak-ng": (("espeak-ng",), "espeak-ng"),
    "sox": (("sox",), "sox"),
    "chromium": (("chromium", "chromium-browser"), "chromium"),
}
#: Each data set a test may read: a file that is there when it is, and its Debian package.
DATA = {"librivox": (LIBRIVOX / "transcription", "pocketsphinx-testdata")}


def program(name: str, path: str | None = None) -> str | None:
    """The full path of program ``name`` on ``path`` (default: $PATH), None when it is not installed."""
    names, _ = PROGRAMS[name]
    return next((found for n in names if (found := shutil.which(n, path=path)) is not None), None)


def missing(*names: str, path: str | None = None) -> str | None:
    """Why a test needing ``names`` cannot run here (what is missing, and how to install it), None when it can."""
    absent = [n for n in names if n in PROGRAMS and program(n, path) is None]
    absent += [n for n in names if n in DATA and not DATA[n][0].is_file()]
    unknown = [n for n in names if n not in PROGRAMS and n not in DATA]
    if unknown:
        raise ValueError(f"unknown requirement(s) {unknown}; known: {sorted(PROGRAMS) + sorted(DATA)}")
    if not absent:
        return None
    packages = " ".join(dict.fromkeys((PROGRAMS.get(n) or DATA[n])[1] for n in absent))
    what = ", ".join(f"{n} (not on PATH)" if n in PROGRAMS else f"{n} ({DATA[n][0]} is missing)" for n in absent)
    return f"needs {what}: apt-get install {packages}; .ci/run installs it"


def needs(*names: str) -> pytest.MarkDecorator:
    """A skip marker for a test that needs ``names`` (programs or data sets), with the reason ``missing`` gives."""
    reason = missing(*names)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def require(*names: str) -> None:
    """Skip the running test (or fixture) now when ``names`` are not all here."""
    reason = missing(*names)
    if reason is not None:
        pytest.skip(reason)
