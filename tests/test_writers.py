"""Who writes a result's files (docs/results.md, "Views"): the JSON, CSV and Markdown of every kind are written by
the exports (speechperf.exports, through speechperf.lifecycle) from the document, and rendered only by the views
(speechperf.views). A command that built its own table text or wrote its own export could not be shown again by
``speechperf show``; these tests find one by reading the code."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The modules that may render a table as CSV or Markdown text.
RENDERERS = ("speechperf/views/", "speechperf/tables.py")
#: The modules that may write a result document or its exports.
WRITERS = ("speechperf/exports.py", "speechperf/results/", "speechperf/lifecycle.py")
#: The names an atomic write is given for a result's exports (speechperf.outputs.write_text_atomic's ``what``).
EXPORTS = {"--output", "-o", "--csv", "--markdown"}

Sources = Iterable[tuple[str, ast.Module]]


def repo_sources() -> Sources:
    for folder in ("speechperf", "backends", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _calls(sources: Sources, allowed: tuple[str, ...]):
    for path, tree in sources:
        if not path.startswith(allowed):
            yield from ((path, node) for node in ast.walk(tree) if isinstance(node, ast.Call))


def renderers(sources: Sources) -> list[str]:
    """Calls of ``to_csv`` / ``to_markdown`` outside the views."""
    return [f"{p}:{c.lineno}" for p, c in _calls(sources, RENDERERS) if _name(c) in ("to_csv", "to_markdown")]


def writers(sources: Sources) -> list[str]:
    """An atomic write named as an export, or a document's ``write``, outside the exports."""
    found = []
    for path, call in _calls(sources, WRITERS):
        texts = {a.value for a in [*call.args[2:3], *(k.value for k in call.keywords)] if isinstance(a, ast.Constant)}
        exported = _name(call) == "write_text_atomic" and texts & EXPORTS
        document = _name(call) == "write" and isinstance(call.func, ast.Attribute) and _is_doc(call.func.value)
        if exported or document:
            found.append(f"{path}:{call.lineno}")
    return found


def _is_doc(value: ast.expr) -> bool:
    return isinstance(value, ast.Name) and value.id in ("doc", "document")


def test_only_the_views_render_csv_or_markdown():
    found = renderers(repo_sources())
    assert not found, "render a table in the kind's view (speechperf/views/), not here: " + "; ".join(found)


def test_only_the_exports_write_a_result_s_files():
    found = writers(repo_sources())
    assert not found, "write through speechperf.exports / speechperf.lifecycle: " + "; ".join(found)


def test_the_scans_find_what_is_planted_and_pass_what_is_allowed():
    planted = ast.parse(
        "text = tables.to_markdown(['a'], [[1]])\n"
        "write_text_atomic(path, text, '--markdown')\n"
        "doc.write(path)\n"
        "write_text_atomic(folder / 'manifest.json', text, 'zoo manifest')\n"  # a cache file: not an export
    )
    assert renderers([("speechperf/compare/run.py", planted)]) == ["speechperf/compare/run.py:1"]
    assert writers([("speechperf/compare/run.py", planted)]) == [
        "speechperf/compare/run.py:2",
        "speechperf/compare/run.py:3",
    ]
    assert renderers([("speechperf/views/bench.py", planted)]) == []
    assert writers([("speechperf/exports.py", planted)]) == []
