"""`speechperf plugin new NAME` writes a plugin that pip installs, registers its backend, and whose first pytest
runs the conformance suite: the protocol checks pass and the rest fail on the stubs, saying what is not written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")


def run(*command, cwd, env=None):
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    where = tmp_path_factory.mktemp("plugin")
    made = run(sys.executable, "-m", "speechperf", "plugin", "new", "myrt", "--dir", str(where), cwd=where)
    assert made.returncode == 0, made.stderr
    folder = where / "speechperf-myrt"
    site = where / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site)]
    done = run(*pip, str(folder), cwd=where)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder, {**os.environ, "PYTHONPATH": str(site)}


def test_the_installed_plugin_is_registered(installed):
    folder, env = installed
    listed = run(sys.executable, "-m", "speechperf", "backends", cwd=folder, env=env)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if [c.strip() for c in line.split("│")[1:2]] == ["myrt"])
    assert row.split("│")[3].strip() == "yes" and "onnx" in row, row


def test_its_first_pytest_runs_the_conformance_suite(installed):
    folder, env = installed
    done = run(sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "-q", "-rA", cwd=folder, env=env)
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert "PASSED tests/test_conformance.py::TestMyrtBackend::test_satisfies_protocol" in out
    assert "PASSED tests/test_conformance.py::TestMyrtBackend::test_availability_reports_version" in out
    assert "test_session_matches_reference_at_any_batch_and_length" in out
    assert 'MyrtBackend._load is not implemented yet (see speechperf\'s docs/backends.md, "The backend class")' in out


def test_a_bad_name_is_one_line(tmp_path):
    done = run(sys.executable, "-m", "speechperf", "plugin", "new", "My-RT", "--dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "Error: plugin name 'My-RT' is not allowed; use lowercase letters, digits and _ , starting with a letter "
        "(it names the backend, the package speechperf_NAME and the entry point)"
    ]
    assert not list(Path(tmp_path).iterdir())
