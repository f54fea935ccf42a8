"""``speechperf profile -o/--csv/--markdown/--store`` writes a ``profile`` document (the op table, the step by
category, the step timing and Perf Summary, the trace's path), and ``speechperf show`` of it, from the JSON or the
stored run, prints what the profile printed and writes the same Markdown and CSV. The category table the profiler
writes beside its trace, and a version 1 one, are shown too; ``profile-compare`` reads the ``-o`` document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.show_again import assert_shown_again, assert_shown_from_json_and_store, export_args, invoke

pytest.importorskip("onnxruntime")
from tests.test_profiler_onnxruntime import tiny_onnx  # noqa: E402,F401  (the fixture)

S2T = str(Path(__file__).resolve().parents[1] / "configs" / "S2T.yaml")


def test_a_model_profile_is_written_as_a_document_and_shown_again(tmp_path, tiny_onnx):  # noqa: F811
    trace, store = tmp_path / "trace.json", tmp_path / "s.sqlite"
    options = f"batch_range=[2,5]; sorted_key=calls; profile_path={trace}"
    args = ["profile", "-b", "onnxruntime", "--model", str(tiny_onnx), "--input", "x:2x80x30"]
    done = invoke(*args, "--profiler-options", options, *export_args(tmp_path / "run"), "--store", str(store))
    assert done.exit_code == 0, done.output
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["kind"] == "profile" and doc["backend"] == "onnxruntime" and doc["trace_path"] == str(trace)
    assert doc["timing"]["steps"] == 3 and doc["recorded_steps"] == [2, 3, 4] and doc["ips_unit"] == "samples/s"
    assert set(doc["perf_summary"]) == {"batch_cost", "ips"} and doc["profiled"]["inputs"] == {"x": [2, 80, 30]}
    # every op in the CSV, in the document's order (sorted by calls), its times in ms
    csv_lines = (tmp_path / "run.csv").read_text().splitlines()
    assert csv_lines[0] == "op,calls,total_ms,avg_ms,max_ms,min_ms,flops"
    assert [line.split(",")[0] for line in csv_lines[1:]] == [op["op"] for op in doc["ops"]]
    assert [op["calls"] for op in doc["ops"]] == sorted((op["calls"] for op in doc["ops"]), reverse=True)
    # the console's category table is the document's: its conv row from the stored counts
    conv = next(line for line in done.stdout.splitlines() if line.startswith("│ conv "))
    assert float(conv.split("│")[2]) == pytest.approx(doc["by_category"]["conv"] / doc["steps"] / 1e6, abs=6e-4)
    assert f"trace: {trace}" in done.stdout and "steps timed: 3" in done.stdout
    assert "## onnxruntime ops, sorted by calls (ms)" in (tmp_path / "run.md").read_text()
    assert_shown_from_json_and_store(done.stdout, tmp_path / "run", store)
    # the -o document is a category table profile-compare reads, as the one beside the trace
    both = invoke("profile-compare", str(tmp_path / "run.json"), str(trace.with_name("trace.categories.json")))
    assert both.exit_code == 0, both.output
    assert "1.00x" in both.stdout  # the same counts on both sides


def test_a_timer_only_profile_is_shown_again(tmp_path, tiny_onnx):  # noqa: F811
    options = "batch_range=[1,4]; timer_only=true"
    done = invoke(
        "profile", "-b", "onnxruntime", "--model", str(tiny_onnx), "--input", "x:2x80x30", "--profiler-options",
        options, *export_args(tmp_path / "run"), "--no-store",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["ops"] == [] and doc["rows"] == [] and doc["trace_path"] is None and "Perf Summary" in done.stdout
    assert_shown_again(done.stdout, tmp_path / "run", [tmp_path / "run.json"])


def test_a_version_1_category_table_is_shown(tmp_path):
    """Before the result document the profiler wrote the category table's body alone (no kind, no version)."""
    counts = {"matmul/linear": 3_000_000, "conv": 1_000_000, "rnn": 0, "attention": 0, "norm": 0}
    counts |= {"elementwise": 500_000, "data movement": 0, "optimizer": 0, "backward total": 0, "other": 0}
    old = {"backend": "torch", "steps": 2, "step_ns": 10_000_000, "by_category": counts, "source": "torch ops"}
    (tmp_path / "old.categories.json").write_text(json.dumps(old))
    shown = invoke("show", str(tmp_path / "old.categories.json"), "--csv", str(tmp_path / "old.csv"))
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert "torch step by category (2 steps)" in shown.stdout
    row = {cells[1].strip(): cells[2].strip() for cells in (line.split("│") for line in lines) if len(cells) > 3}
    assert row["matmul/linear"] == "1.500" and row["conv"] == "0.500" and row["between ops"] == "2.750"
    assert row["step"] == "5.000"


@pytest.mark.slow
def test_a_config_profile_on_onnxruntime_is_shown_again(tmp_path):
    trace, store = tmp_path / "s2t.json", tmp_path / "s.sqlite"
    config = ["--config", S2T, "--preset", "tiny", "--dataset-size", "2", "--set", "stage1.max_len_b=8"]
    done = invoke(
        "profile", "-b", "onnxruntime", *config, "--profiler-options", f"batch_range=[2,5]; profile_path={trace}",
        *export_args(tmp_path / "run"), "--store", str(store),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["profiled"]["stages"] == ["stage1 s2t/tiny"] and doc["profiled"]["samples"] == 2
    assert doc["config"]["general"]["model_type"] == "S2T" and doc["timing"]["steps"] == 3
    assert "onnxruntime ops, sorted by total" in done.stdout
    assert_shown_from_json_and_store(done.stdout, tmp_path / "run", store)


def test_the_ops_furthest_below_the_roof_are_shown_from_the_document():
    """The op FLOPs and the roof are in the document: the table of the ops that lose most time against the roof is
    drawn from them (time lost = time - FLOPs / roof)."""
    from speechperf.profiler.summary import OpStat, ProfileSummary
    from speechperf.results import loads
    from speechperf.views import Shown, view_of

    ops = (OpStat("matmul", 2, 4_000_000, 3_000_000, 1_000_000, flops=8_000_000_000), OpStat("add", 4, 10, 4, 1))
    ops += (OpStat("conv", 1, 3_000_000, 3_000_000, 3_000_000, flops=1_000_000_000),)
    summary = ProfileSummary("torch", "total", ops=ops, roof=(4000.0, "numpy GEMM, 1 thread(s)"))
    doc = loads(summary.to_document().dumps())
    text = view_of("profile").console(doc, Shown())
    assert "ops furthest below the roof (4000.0 GFLOP/s, numpy GEMM, 1 thread(s))" in text
    below = text.split("ops furthest below the roof", 1)[1].splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in below if line.startswith("│ ")]
    # conv: 3 ms - 1 GFLOP / 4000 GFLOP/s = 2.75 ms lost; matmul: 4 ms - 2 ms = 2 ms; add has no FLOP count
    assert [(r[0], r[-1]) for r in rows] == [("conv", "2.750"), ("matmul", "2.000")]
    assert rows[1][4] == "2000.0" and rows[1][5] == "50.0"  # GFLOP/s, % of roof
