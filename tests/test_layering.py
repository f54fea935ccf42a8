"""The import rules of DESIGN.md section 2, checked on the source and on a live interpreter."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = {"torch", "paddle", "onnxruntime", "onnx", "paddle2onnx", "onnxscript", "silero_vad"}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def sources(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


def top(name: str) -> str:
    return name.split(".")[0]


@pytest.mark.parametrize("path", sources("speechperf"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_no_framework_and_no_backend(path):
    for name in imported_modules(path):
        assert top(name) not in FRAMEWORKS, f"{path.relative_to(ROOT)} imports {name}"
        assert not name.startswith("speechperf.backends"), f"{path.relative_to(ROOT)} imports {name}"


@pytest.mark.parametrize("path", sources("adapters"), ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_no_framework_and_no_backend(path):
    for name in imported_modules(path):
        assert top(name) not in FRAMEWORKS, f"{path.relative_to(ROOT)} imports {name}"
        assert not name.startswith("speechperf.backends"), f"{path.relative_to(ROOT)} imports {name}"


@pytest.mark.parametrize("path", sources("backends"), ids=lambda p: str(p.relative_to(ROOT)))
def test_backends_import_only_their_own_framework(path):
    parts = path.relative_to(ROOT / "backends").parts
    if len(parts) == 1:
        return
    own = parts[0]
    for name in imported_modules(path):
        if name.startswith("speechperf.backends."):
            assert name.split(".")[2] == own, f"{path.relative_to(ROOT)} imports another backend: {name}"
        assert not name.startswith("speechperf.adapters"), f"{path.relative_to(ROOT)} imports an adapter: {name}"


LIVE_CHECK = """
import sys
{body}
loaded = sorted(m for m in sys.modules if m.split('.')[0] in {frameworks!r})
print('LOADED:' + ','.join(loaded))
"""


@pytest.mark.parametrize(
    "body",
    [
        "import speechperf",
        "import speechperf.registry; speechperf.registry.known_backends(); "
        "[speechperf.registry.get_backend(n) for n in speechperf.registry.known_backends()]",
        "from speechperf.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    ],
    ids=["import speechperf", "registry lookups", "speechperf --help"],
)
def test_no_framework_is_imported(body):
    code = LIVE_CHECK.format(body=body, frameworks=FRAMEWORKS)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.strip().splitlines()[-1]
    assert loaded == "LOADED:", f"frameworks imported: {loaded}"
