"""The type checker is clean on speechperf/ (pyproject.toml [tool.mypy]); CI runs the suite, so CI runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_reports_no_issue_on_speechperf():
    pytest.importorskip("mypy", reason='needs the linters: pip install -c constraints.txt -e ".[lint]"')
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("Success: no issues found in ")
