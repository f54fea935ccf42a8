"""``speechperf show`` of an optimize document: a real ``speechperf optimize`` run (onnxruntime, the tiny reference
S2T, one int8 method, one run per variant) and ``show`` of its JSON and of its stored id print the same stdout and
write the same CSV and Markdown; a version 1 document (before the envelope) is shown from its upgraded rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.show_again import assert_shown_from_json_and_store, export_args, show, speechperf, stored_id

DATA = Path(__file__).parent / "data"


@pytest.mark.slow
def test_show_prints_and_writes_what_the_optimize_run_did_from_its_json_and_its_stored_id(tmp_path):
    run, store = tmp_path / "run", tmp_path / "store.sqlite"
    ran = speechperf(
        "optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--runs", "1", "--preset", "tiny",
        "--dataset-size", "3", "--calibration-size", "2", "--set", "general.repeat=1", "--set", "general.warmup=1",
        "--out-dir", tmp_path / "variants", *export_args(run), "--store", store, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert "speechperf optimize: " in ran.stdout and "| ort-dynamic |" in (tmp_path / "run.md").read_text()
    assert_shown_from_json_and_store(ran.stdout, run, store, stored_id(ran, "optimize"))


def test_a_version_1_optimize_document_is_shown_from_its_upgraded_rows(tmp_path):
    """tests/data/v1/optimize.json: written before the envelope; its latency_ms is shown as mean_ms is."""
    stdout, markdown, _ = show(DATA / "v1" / "optimize.json", tmp_path / "o")
    assert "speechperf optimize: " in stdout and "speed-up vs fp32" in stdout
    markdown = markdown.splitlines()
    assert markdown[0].startswith("| variant | status | size MB (x fp32) | latency ms mean ± σ |")
    assert markdown[3].startswith("| ort-dynamic | ") and " | 7.20 ± 0.60 | 1.23" in markdown[3]
