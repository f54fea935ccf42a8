"""`config check -b BACKEND` says ok only to what bench starts: with the backend not installed (onnxruntime made
unimportable in the child, as when it is missing: a sitecustomize on PYTHONPATH), it exits 2 with bench's own line
(issue 44, item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def without_onnxruntime(shim: Path, *args: str) -> subprocess.CompletedProcess:
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text("import sys\nsys.modules['onnxruntime'] = None\n")
    paths = [str(shim), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run(
        [sys.executable, "-m", "speechperf", *args], capture_output=True, text=True, timeout=300, cwd=REPO, env=env
    )


@pytest.mark.slow
def test_config_check_refuses_a_backend_that_is_not_installed_in_benchs_line(tmp_path):
    shim = tmp_path / "shim"
    check = without_onnxruntime(shim, "config", "check", "-b", "onnxruntime", "VAD")
    bench = without_onnxruntime(shim, "bench", "-b", "onnxruntime", "--config", "VAD", "--meters", "runtime")
    assert (check.returncode, bench.returncode) == (2, 2), (check.stderr, bench.stderr)
    line = check.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line == bench.stderr.strip()
    assert "backend 'onnxruntime' is not available" in line and 'pip install "speechperf[onnx]"' in line
    assert "ok" not in check.stdout
    # The same config on an installed backend is ok, and without -b nothing is imported, so it stays ok.
    assert without_onnxruntime(shim, "config", "check", "VAD").returncode == 0
