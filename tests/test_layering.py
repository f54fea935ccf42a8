"""The import rules of DESIGN.md section 2, checked on the source and on a live interpreter, and the rule behind
them: the core and the adapters know no backend by name (what a backend can do is asked of the backend)."""

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


def builtin_backend_names() -> set[str]:
    from importlib.metadata import entry_points

    return {ep.name for ep in entry_points(group="speechperf.backends") if ep.value.startswith("speechperf.backends.")}


#: (file, the module-level name a backend name may be assigned to, why it is not backend knowledge).
NAME_ALLOWED = {
    ("speechperf/benchmark/report.py", "PACKAGES"): "distributions whose versions the result's environment records",
    ("adapters/paddlespeech.py", "DEFAULT_BACKEND"): "the PaddleSpeech adapter runs PaddleSpeech's own framework",
}


def backend_names_in_code(source: str, names: set[str]) -> list[tuple[int, str, str | None]]:
    """(line, name, module-level target or None) of every string constant equal to a backend name, docstrings
    excepted: ``if name == "paddle"``, ``get_backend("torch")``, ``{"onnxruntime": ...}`` all count."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    targets = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            names_of = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            target = next((t.id for t in names_of if isinstance(t, ast.Name)), None)
            for node in ast.walk(statement):
                targets[id(node)] = target
    return [
        (node.lineno, node.value, targets.get(id(node)))
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
    ]


def test_the_name_check_catches_backend_knowledge():
    code = 'def pick(name):\n    """Not torch."""\n    if name == "paddle":\n        return get_backend("torch")\n'
    assert backend_names_in_code(code, {"torch", "paddle"}) == [(3, "paddle", None), (4, "torch", None)]


@pytest.mark.parametrize("path", sources("speechperf") + sources("adapters"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_and_adapters_name_no_builtin_backend(path):
    """Which formats a backend loads, how it builds reference models, how it runs the silero VAD: hooks and
    attributes of the backend class (speechperf.backend.BackendBase), never ``if name == "paddle"``."""
    names = builtin_backend_names()
    assert names >= {"torch", "paddle", "onnxruntime"}
    where = path.relative_to(ROOT).as_posix()
    for line, name, target in backend_names_in_code(path.read_text(), names):
        assert (where, target) in NAME_ALLOWED, f"{where}:{line} names backend {name!r}; ask the backend instead"


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
