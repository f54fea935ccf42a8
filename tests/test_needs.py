"""The skip of a test that needs a program or data set the machine lacks (tests/needs.py): with PATH emptied, a
test needing espeak-ng, sox or chromium skips, naming what is missing and the apt-get command; with the program on
PATH it runs."""

from __future__ import annotations

import pytest

import tests.needs
from tests.needs import missing, needs

pytest_plugins = ["pytester"]


def fake_program(folder, name):
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_with_path_emptied_each_program_is_missing_and_named_with_its_package(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert missing("espeak-ng", "sox") == (
        "needs espeak-ng (not on PATH), sox (not on PATH): apt-get install espeak-ng sox; .ci/run installs it"
    )
    assert missing("chromium") == "needs chromium (not on PATH): apt-get install chromium; .ci/run installs it"
    mark = needs("sox")
    assert mark.args == (True,) and mark.kwargs["reason"].startswith("needs sox (not on PATH)")


def test_a_program_on_path_is_not_missing_under_any_of_its_names(tmp_path, monkeypatch):
    fake_program(tmp_path, "sox")
    fake_program(tmp_path, "chromium-browser")  # Ubuntu's name
    monkeypatch.setenv("PATH", str(tmp_path))
    assert missing("sox", "chromium") is None
    assert (
        missing("sox", "espeak-ng") == "needs espeak-ng (not on PATH): apt-get install espeak-ng; .ci/run installs it"
    )
    assert needs("sox").args == (False,)


def test_missing_data_names_its_file_and_package(tmp_path, monkeypatch):
    monkeypatch.setitem(tests.needs.DATA, "librivox", (tmp_path / "transcription", "pocketsphinx-testdata"))
    assert missing("librivox") == (
        f"needs librivox ({tmp_path / 'transcription'} is missing): apt-get install pocketsphinx-testdata; "
        ".ci/run installs it"
    )
    (tmp_path / "transcription").write_text("x")
    assert missing("librivox") is None
    with pytest.raises(ValueError, match="unknown requirement"):
        missing("espeak")


def test_a_marked_test_skips_saying_why_when_path_is_empty(pytester, monkeypatch):
    pytester.makepyfile(
        test_speaks="""
        from tests.needs import needs, require

        @needs("espeak-ng", "sox")
        def test_marked():
            raise AssertionError("ran without espeak-ng")

        def test_required():
            require("chromium")
            raise AssertionError("ran without chromium")
        """
    )
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PATH", "")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*needs espeak-ng (not on PATH), sox (not on PATH): apt-get install espeak-ng sox*"])
    result.stdout.fnmatch_lines(["*needs chromium (not on PATH): apt-get install chromium*"])
