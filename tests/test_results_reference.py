"""docs/results.md lists every figure of ``speechperf.results.figures`` with its unit: the table there is the one
``reference_table()`` makes, so a figure added in the code without the docs (or the reverse) fails here."""

from __future__ import annotations

from pathlib import Path

from speechperf.results import KINDS
from speechperf.results.figures import FIGURES, reference_table

DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def test_docs_results_holds_the_generated_table_of_every_figure_and_every_kind():
    text = DOC.read_text()
    assert reference_table() in text, "regenerate the table: speechperf.results.figures.reference_table()"
    lines = {line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `")}
    for figure in FIGURES:
        assert f"| {figure.unit} |" in lines[figure.name], figure.name
    for kind in KINDS:
        assert kind in lines, kind
