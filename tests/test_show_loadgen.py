"""``speechperf show`` on a ``loadgen`` document prints what ``speechperf loadgen`` printed and writes the same
Markdown and CSV, from the JSON file and from the store; an upgraded version 1 file is shown by the same view."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.show_again import assert_shown_from_json_and_store, export_args, show, speechperf, stored_id

pytest.importorskip("mlperf_loadgen", reason='needs the loadgen extra: pip install "speechperf[loadgen]"')


def loadgen(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess:
    """A real ``speechperf loadgen`` (a process of its own: LoadGen's C++ threads) on the tiny S2T over generated
    data, with every export; the cheapest run there is (two samples, 1 s tests)."""
    pytest.importorskip("onnxruntime")
    command = ["loadgen", "-b", "onnxruntime", "--dataset-size", "2", "--duration", "1"]
    command += ["--log-dir", tmp_path / f"{name}-logs", "--store", tmp_path / "store.sqlite"]
    return speechperf(*command, *export_args(tmp_path / name), *args)


@pytest.mark.slow
def test_show_prints_and_writes_what_a_single_stream_run_did(tmp_path):
    done = loadgen(tmp_path, "single", "--scenario", "SingleStream")
    assert_shown_from_json_and_store(done.stdout, tmp_path / "single", tmp_path / "store.sqlite", stored_id(done))
    doc = json.loads((tmp_path / "single.json").read_text())
    # what the console printed under the table is the document's notes (the view makes both from the runs)
    assert "SingleStream: not MLPerf-compliant: duration 1 s < 600 s" in done.stdout.splitlines()
    assert "SingleStream: not MLPerf-compliant: duration 1 s < 600 s" in doc["notes"]
    assert (tmp_path / "single.csv").read_text().splitlines()[1].startswith("SingleStream,performance,,onnxruntime")


@pytest.mark.slow
def test_show_prints_and_writes_what_a_server_peak_search_did(tmp_path):
    # p50 and 20 queries: LoadGen's early stopping lets a 1 s trial be VALID; the budget bounds the trials
    args = ["--scenario", "Server", "--find-peak", "--budget", "4", "--percentile", "50", "--min-queries", "20"]
    done = loadgen(tmp_path, "peak", *args)
    assert_shown_from_json_and_store(done.stdout, tmp_path / "peak", tmp_path / "store.sqlite", stored_id(done))
    doc = json.loads((tmp_path / "peak.json").read_text())
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("Server peak"))
    assert f"{doc['peak']['trials']} trial(s) in " in line and line in doc["notes"]
    assert [row["mode"] for row in doc["rows"]][-1] == "peak"  # in the exports, not in the console's table


def version_1_server_peak() -> dict:
    """A version 1 loadgen file (no envelope, no rows, no scenario options): one VALID Server trial, its peak."""
    from speechperf.loadgen.report import LoadgenRun, StageTime, runs_json
    from speechperf.loadgen.summary import Summary

    summary = Summary(True, "VALID", (), {"p50": 1.0, "p90": 2.0, "p99": 3.0}, 1.5, "completed 8.90 samples/s", 9.0,
                      8.9, 8.9, {})  # fmt: skip
    stages = (StageTime("asr", 4, 1.25, 2.5), StageTime("mt", 4, 0.5, 0.75))
    run = LoadgenRun(
        "Server", "performance", "torch", 1, 1, 9.0, 100.0, 99.0, summary, 5.0, 1.0, 4, stages, {},
        ("not MLPerf-compliant: duration 1 s < 600 s",), "logs/peak-01-9qps",
    )  # fmt: skip
    peak = {"peak_qps": 9.0, "target_qps": 9.0, "peak_trial": 1, "peak_latency_ms": 3.0, "lower_bound": True,
            "stopped": "the budget", "trials": 1, "seconds": 2.0, "budget_s": 5.0}  # fmt: skip
    return {"complete": True, "backend": "torch", "peak": peak, "runs": runs_json([run])}


def test_an_upgraded_version_1_file_is_shown_by_the_loadgen_view(tmp_path):
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(version_1_server_peak()))
    stdout, markdown, csv = show(path, tmp_path / "v3")
    lines = stdout.splitlines()
    assert any(ln.startswith("│ torch ") and " Server " in ln and " VALID " in ln for ln in lines), stdout
    assert not any(" peak " in ln for ln in lines if ln.startswith("│"))  # the peak row is the line below
    # the bound and the percentile of a file without scenario options: its trials'
    assert (
        "Server peak (a lower bound: no faster trial missed the bound): 9.00 scheduled samples/s (LoadGen's; target "
        "9.00 QPS, trial 1) VALID at p99 <= 100 ms (p99 3.0 ms; 1 trial(s) in 2 s; the budget)"
    ) in lines
    assert "Server: not MLPerf-compliant: duration 1 s < 600 s" in lines
    assert "Server: stage asr: mean 1.25 ms, p90 2.50 ms over 4 call(s) (service time, no queueing)" in lines
    assert markdown.splitlines()[0].startswith("| scenario | mode | trial |")
    assert [row.split(",")[1] for row in csv.splitlines()[1:]] == ["performance", "peak"]
    # the upgraded file, written again by show, shows the same
    assert show(tmp_path / "v3.json", tmp_path / "v3-again") == (stdout, markdown, csv)
