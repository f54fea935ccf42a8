"""``speechperf show`` of a tune document: a real ``speechperf tune`` (onnxruntime's fp32 variants of the tiny
reference S2T, two samples, the final compare included) and ``show`` of its JSON and of its stored id print the same
stdout and write the same CSV and Markdown."""

from __future__ import annotations

import pytest

from tests.show_again import assert_shown_from_json_and_store, export_args, speechperf, stored_id


@pytest.mark.slow
def test_show_prints_and_writes_what_the_tune_run_did_from_its_json_and_its_stored_id(tmp_path):
    run, store = tmp_path / "run", tmp_path / "store.sqlite"
    ran = speechperf(
        "tune", "--preset", "tiny", "--dataset-size", "2", "--set", "general.repeat=1", "--backends", "onnxruntime",
        "--precisions", "fp32", "--final-runs", "2", "--budget", "600", "--out-dir", tmp_path / "out",
        *export_args(run), "--store", store, cwd=tmp_path, timeout=900,
    )  # fmt: skip
    # stdout is the tune's report alone: its stage table, the pipelines and the answer (the final compare's own
    # table goes to stderr)
    assert ": stage1 (s2t)" in ran.stdout and ": end to end" in ran.stdout
    assert "\nwinner: " in ran.stdout or "\nanswer: the reference (all default) stays: " in ran.stdout  # or a tie
    assert "\n## The answer\n" in (tmp_path / "run.md").read_text()
    assert_shown_from_json_and_store(ran.stdout, run, store, stored_id(ran, "tune"))
