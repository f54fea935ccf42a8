"""The ``diff`` document in one unit, named (``figure``, ``figure_unit``: times in ms for every kind), a version 3
diff (seconds for bench) read as version 4, a serving row's units, the verdict of a row without a test, and two
Server peak searches gated through their brackets. Fast: documents made here with known figures, or written by the
version 3 code (tests/data/v3: ``diff`` of tests/data/v2/bench.json and tests/data/v1/loadgen.json with
themselves)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from speechperf.cli import main
from speechperf.results import Document, read
from speechperf.results.loadgen_table import rows as loadgen_rows
from tests.test_diff_runs import FAST, bench_doc

DATA = Path(__file__).parent / "data"


def diff(base: Path, new: Path, out: Path, *args: str):
    return CliRunner().invoke(main, ["diff", str(base), str(new), "--no-store", "-o", str(out), *args])


def test_a_bench_diff_keeps_its_times_in_ms_named_and_a_row_without_a_test_says_so(tmp_path):
    base = bench_doc(tmp_path / "a.json", [FAST])
    done = diff(base, base, tmp_path / "d.json", "--fail-above", "5%")
    assert done.exit_code == 0, done.output
    total = next(r for r in read(tmp_path / "d.json").rows if r["unit"] == "total")
    mean_ms = sum(FAST) / len(FAST)
    assert (total["figure"], total["figure_unit"]) == ("mean_ms", "ms")
    assert abs(total["base"] - mean_ms) < 1e-9 and abs(total["base_mean_ms"] - mean_ms) < 1e-9
    # within the threshold, and still untested: the row gates nothing, and says so (not "ok")
    assert total["untested"] == "no significance test: one process per side"
    assert total["verdict"] == "not gated (no test)"


def test_a_version_3_bench_diff_is_read_in_ms_and_shown_as_it_was(tmp_path):
    raw = json.loads((DATA / "v3" / "diff-bench.json").read_text())
    doc = read(DATA / "v3" / "diff-bench.json")
    assert raw["schema_version"] == 3 and doc.schema_version == 4
    before, after = raw["rows"][1], doc.rows[1]
    assert after["base"] == before["base"] * 1e3 and after["base_mean_ms"] == before["base_mean_s"] * 1e3
    assert "base_mean_s" not in after and (after["figure"], after["figure_unit"]) == ("mean_ms", "ms")
    shown = CliRunner().invoke(main, ["show", str(DATA / "v3" / "diff-bench.json")])
    assert shown.exit_code == 0 and f"{before['base'] * 1e3:.2f} (n=1)" in shown.output


def test_a_version_3_loadgen_diff_keeps_its_ms_and_counts_one_run_a_side():
    raw = json.loads((DATA / "v3" / "diff-loadgen.json").read_text())
    doc = read(DATA / "v3" / "diff-loadgen.json")
    row = doc.rows[-1]
    assert row["metric"] == "p90" and row["base"] == raw["rows"][-1]["base"]  # LoadGen's ms already
    assert (row["figure"], row["figure_unit"], row["base_units"], row["new_units"]) == ("p90_ms", "ms", 1, 1)


def peak_doc(path: Path, peak_qps: float, bracket: list, converged: bool) -> Path:
    """A loadgen document of one Server peak search: its peak row, from the search's result."""
    peak = {"peak_qps": peak_qps, "completed_qps": peak_qps * 0.9, "target_qps": bracket[0], "peak_trial": None}
    peak.update(bracket=bracket, converged=converged, lower_bound=bracket[1] is None, trials=4)
    rows = loadgen_rows([], peak)
    rows[-1].update(scenario="Server", backend="onnxruntime")
    env = {"backend": "onnxruntime", "threads": 1}
    Document(kind="loadgen", rows=rows, body={"peak": peak}, complete=True, environment=env, config={}).write(path)
    return path


def test_two_peaks_whose_brackets_overlap_are_not_gated_on_their_ratio(tmp_path):
    # the same SUT: one search converged near 82, the other stopped by its budget between 55.1 and 82.6
    base = peak_doc(tmp_path / "a.json", 81.92, [80.0, 83.6], True)
    new = peak_doc(tmp_path / "b.json", 54.53, [55.1, 82.6], False)
    done = diff(base, new, tmp_path / "d.json", "--fail-above", "5%")
    assert done.exit_code == 0, done.output
    row = read(tmp_path / "d.json").rows[0]
    assert row["unit"] == "Server peak" and row["new_over_base"] < 0.7  # the ratio alone would fail it
    assert row["verdict"] == "not gated (brackets overlap)" and "not gated (brackets overlap)" in done.output
    assert (row["base_bracket"], row["new_bracket"]) == ([80.0, 83.6], [55.1, 82.6])
    assert "BASE's peak is between 80.0 and 83.6 QPS, NEW's between 55.1 and 82.6 QPS" in done.output


def test_two_peaks_whose_brackets_part_by_more_than_the_threshold_are_a_regression(tmp_path):
    base = peak_doc(tmp_path / "a.json", 81.92, [80.0, 83.6], True)
    new = peak_doc(tmp_path / "b.json", 41.0, [40.0, 42.0], True)  # a real halving
    done = diff(base, new, tmp_path / "d.json", "--fail-above", "5%")
    assert done.exit_code == 1, done.output
    assert read(tmp_path / "d.json").rows[0]["verdict"] == "REGRESSION"
    # NEW's search found no rate that missed the bound: its peak may be anywhere above 40, so no drop is shown
    unbounded = peak_doc(tmp_path / "c.json", 41.0, [40.0, None], False)
    assert diff(base, unbounded, tmp_path / "e.json", "--fail-above", "5%").exit_code == 0


def single_stream_doc(path: Path, scale: float) -> Path:
    """A loadgen document of one SingleStream test read from LoadGen's real logs, its early-stopping estimate
    times ``scale``."""
    import attrs

    from speechperf.loadgen.summary import read_summary
    from speechperf.results.loadgen_table import run_row

    summary = read_summary(DATA / "loadgen" / "single-stream" / "mlperf_log_summary.txt", "SingleStream", 0.0, 90.0)
    summary = attrs.evolve(summary, early_stopping_ms=summary.early_stopping_ms * scale)
    run = {
        "scenario": "SingleStream",
        "mode": "performance",
        "backend": "onnxruntime",
        "summary": attrs.asdict(summary),
    }
    env = {"backend": "onnxruntime", "threads": 1}
    Document(kind="loadgen", rows=[run_row(run)], body={}, complete=True, environment=env, config={}).write(path)
    return path


def test_a_single_stream_diff_shows_mlperfs_early_stopping_figure_and_can_gate_on_it(tmp_path):
    base, new = single_stream_doc(tmp_path / "a.json", 1.0), single_stream_doc(tmp_path / "b.json", 1.2)
    done = diff(base, new, tmp_path / "d.json", "--fail-above", "5%")
    assert done.exit_code == 0, done.output  # the headline is still the plain p90, the same on both sides
    lines = {line["metric"]: line for line in read(tmp_path / "d.json").rows[0]["figures"]}
    assert lines["early_stopping"]["figure"] == "early_stopping_ms"
    assert abs(lines["early_stopping"]["new_over_base"] - 1.2) < 0.01
    gated = diff(base, new, tmp_path / "e.json", "--fail-above", "5%", "--fail-metric", "early_stopping")
    assert gated.exit_code == 1 and read(tmp_path / "e.json").rows[0]["verdict"] == "REGRESSION"
