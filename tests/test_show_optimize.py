"""``speechperf show`` of an optimize document: a version 1 document (before the envelope) is shown from its upgraded
rows. That show of a real run's JSON and stored id prints the same stdout and writes the same CSV and Markdown is
checked on the runs of tests/test_optimize_cli.py's table test (one optimize, not two)."""

from __future__ import annotations

from pathlib import Path

from tests.show_again import show

DATA = Path(__file__).parent / "data"


def test_a_version_1_optimize_document_is_shown_from_its_upgraded_rows(tmp_path):
    """tests/data/v1/optimize.json: written before the envelope; its latency_ms is shown as mean_ms is."""
    stdout, markdown, _ = show(DATA / "v1" / "optimize.json", tmp_path / "o")
    assert "speechperf optimize: " in stdout and "speed-up vs fp32" in stdout
    markdown = markdown.splitlines()
    assert markdown[0].startswith("| variant | status | size MB (x fp32) | latency ms mean ± σ |")
    assert markdown[3].startswith("| ort-dynamic | ") and " | 7.20 ± 0.60 | 1.23" in markdown[3]
