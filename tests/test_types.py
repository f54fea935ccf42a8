"""The type checker is clean on the whole product: the core, backends/ and adapters/ under their installed names
(``python tools/typecheck.py``, configuration in pyproject.toml [tool.mypy]); CI runs the suite, so CI runs it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TYPECHECK = ROOT / "tools" / "typecheck.py"
NEEDS_MYPY = 'needs the linters: pip install -c constraints.txt -e ".[lint]"'


def typecheck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TYPECHECK), *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_mypy_reports_no_issue_on_the_core_the_backends_and_the_adapters():
    pytest.importorskip("mypy", reason=NEEDS_MYPY)
    done = typecheck()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # Every source file of the three folders, not only the core's (a bare `mypy` at the root checks speechperf/).
    files = sum(1 for folder in ("speechperf", "backends", "adapters") for _ in (ROOT / folder).rglob("*.py"))
    assert done.stdout.strip().splitlines()[-1] == f"Success: no issues found in {files} source files", done.stdout


@pytest.mark.slow
def test_a_type_error_planted_in_a_backend_and_an_adapter_is_reported_at_its_repo_path(tmp_path):
    """The backend's error needs the real module names: mypy must see ``OnnxRuntimeSession.device`` as the core's
    ``str``, which it can only do if ``speechperf.backends.onnxruntime.session`` is checked and not taken as Any."""
    pytest.importorskip("mypy", reason=NEEDS_MYPY)
    spec = importlib.util.spec_from_file_location("lint_imports", ROOT / "tools" / "lint_imports.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    view = tool.build_view(tmp_path / "view")
    planted = {
        "backends/onnxruntime/session.py": "\n\ndef _planted(session: OnnxRuntimeSession) -> int:\n"
        "    return session.device\n",
        # The second in a function without annotations: reported because check_untyped_defs is on.
        "adapters/vad.py": '\n\ndef _planted() -> int:\n    return "not an int"\n'
        '\n\ndef _planted_unannotated(samples):\n    return len(samples) + "1"\n',
    }
    for path, extra in planted.items():
        folder, rest = path.split("/", 1)
        # The view links the whole folder to the repo's: link its files one by one, so one can be replaced.
        linked = view / "speechperf" / folder
        linked.unlink()
        shutil.copytree(ROOT / folder, linked, copy_function=os.symlink, ignore=shutil.ignore_patterns("__pycache__"))
        (linked / rest).unlink()
        (linked / rest).write_text((ROOT / path).read_text() + extra)
    done = typecheck("--view", str(view))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "Found 3 errors in 2 files" in out, out
    assert 'error: Incompatible return value type (got "str", expected "int")' in out, out
    assert 'error: Unsupported operand types for + ("int" and "str")' in out, out
    for path in planted:
        assert any(line.startswith(f"{path}:") and "[return-value]" in line for line in out.splitlines()), out
