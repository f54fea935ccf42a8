"""The layers of docs/architecture.md ("Layers"): the import contracts of pyproject.toml run through import-linter
(tools/lint_imports.py), and what contracts cannot say: no framework is imported when speechperf runs, and the core
and the adapters know no backend by name (what a backend can do is asked of the backend)."""

import ast
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = ROOT / "tools" / "lint_imports.py"
FRAMEWORKS = {"torch", "paddle", "onnxruntime", "onnx", "paddle2onnx", "onnxscript", "silero_vad", "transformers"}


def sources(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


# -- the import rules: import-linter contracts in pyproject.toml ----------------------------------------------------


def lint_imports(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(LINT), "--no-logo", *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_the_import_contracts_hold():
    """Layers, no cycles, no framework in the core or the adapters, backends independent (pyproject.toml)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout, result.stdout


def test_the_contracts_fail_on_a_broken_rule(tmp_path):
    """The same contracts over a copy in which a leaf reaches the CLI (a layer and a cycle broken) and a core module
    imports torch inside a function (grimp sees function-level imports: the rule is 'never', not 'not at import')."""
    spec = importlib.util.spec_from_file_location("lint_imports", LINT)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    view = tool.build_view(tmp_path / "view")
    for name, extra in (
        ("errors.py", "\n\ndef _late():\n    from speechperf.cli import main\n\n    return main\n"),
        ("stats.py", "\n\ndef _late():\n    import torch\n\n    return torch\n"),
    ):
        link = view / "speechperf" / name
        text = link.read_text()
        link.unlink()
        link.write_text(text + extra)
    result = lint_imports("--view", str(view))
    assert result.returncode != 0
    out = result.stdout
    for broken in (
        "The layers: entry points and backends on top, the contract and the leaves below",
        "No import cycles between the sibling modules of any package",
        "The core and the adapters import no framework",
    ):
        assert f"{broken} BROKEN" in out, out
    assert "speechperf.errors -> speechperf.cli" in out and "speechperf.stats -> torch" in out, out


def builtin_backend_names() -> set[str]:
    from importlib.metadata import entry_points

    return {ep.name for ep in entry_points(group="speechperf.backends") if ep.value.startswith("speechperf.backends.")}


#: (file, the module-level name a backend name may be assigned to, why it is not backend knowledge).
NAME_ALLOWED = {
    ("speechperf/results/environment.py", "PACKAGES"): "distributions whose versions a result document records",
    (
        "adapters/loop_framework.py",
        "DEFAULT_BACKEND",
    ): "the PaddleSpeech drop-ins default to PaddleSpeech's own framework",
    (
        "speechperf/zoo/torch_checkpoint.py",
        "STORAGE_MODULE",
    ): "the module name a torch.save pickle stores, read without torch",
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


# -- the drawing of the layers: generated from the contract and the imports, never typed by hand --------------------


def test_the_layers_in_architecture_md_are_the_generated_ones():
    """docs/architecture.md's layer table is what tools/layers.py makes from pyproject.toml's contract, the modules'
    docstrings and their imports today: a module added, moved or importing something new changes it (run
    `python tools/layers.py --write`). In a process of its own, as lint_imports: grimp must find the view's
    speechperf, not the one this process imported."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "layers.py")], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    generated = done.stdout.rstrip("\n")
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    begin, end = generated.splitlines()[0], generated.splitlines()[-1]
    assert text.count(begin) == 1 and text.count(end) == 1
    assert text[text.index(begin) : text.index(end) + len(end)] == generated, "run: python tools/layers.py --write"
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layer_contract,) = [c for c in contract if c["id"] == "layers"]
    every = {name.strip() for layer in layer_contract["layers"] for name in layer.split("|")}
    assert all(f"| `{name}` |" in generated for name in every)  # each module of the contract has its row
    assert "| `adapters` | Framework-free glue" in generated  # the mapped folders are read where they install
