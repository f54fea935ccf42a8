"""Every command is its options and one core call (docs/architecture.md, "Commands"): the function click runs for a
command holds no work of its own, so two commands cannot drift apart in what they do before or after a run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The most lines a command function's body may take, its docstring left out.
MOST = 40


def commands(path: Path) -> list[tuple[str, int]]:
    """Each function of ``path`` decorated as a click command (``@click.command()``, ``@group.command(...)``),
    with its body's line count after the docstring."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        if not any(isinstance(d, ast.Attribute) and d.attr in ("command", "group") for d in decorators):
            continue
        body = node.body
        docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1
        start = body[1 if docstring else 0].lineno
        found.append((node.name, node.end_lineno - start + 1))
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "speechperf" / "cli").glob("*_cmd.py")), ids=lambda p: p.name)
def test_a_command_function_is_its_options_and_one_core_call(path):
    for name, lines in commands(path):
        assert lines <= MOST, f"{path.name}: {name} is {lines} lines; move its work into the core (at most {MOST})"


def test_the_count_sees_a_long_command(tmp_path):
    planted = tmp_path / "long_cmd.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST + 1))
    planted.write_text(f'@click.command()\ndef long():\n    """Doc."""\n{body}\n\n\ndef helper():\n{body}\n')
    assert commands(planted) == [("long", MOST + 1)]  # the helper is no command
