"""The shared CSV / Markdown export: missing values and a '|' inside a cell."""

from speechperf import tables


def test_csv_writes_missing_values_as_empty_fields():
    assert tables.to_csv(["a", "b"], [{"a": 1, "b": None}]) == "a,b\n1,\n"


def test_markdown_escapes_a_pipe_so_the_row_keeps_its_cells():
    md = tables.to_markdown(["cell", "note"], [["torch", "exit 1: a | b"], ["paddle", None]])
    assert md.splitlines() == ["| cell | note |", "|---|---|", "| torch | exit 1: a \\| b |", "| paddle | - |"]
