"""``speechperf show`` on a ``loadgen`` document prints what ``speechperf loadgen`` printed and writes the same
Markdown and CSV, from the JSON file and from the store; an upgraded version 1 file is shown by the same view."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main

pytest.importorskip("mlperf_loadgen", reason='needs the loadgen extra: pip install "speechperf[loadgen]"')


def loadgen(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess:
    """A real ``speechperf loadgen`` (a process of its own: LoadGen's C++ threads) on the tiny S2T over generated
    data, with every export; the cheapest run there is (two samples, 1 s tests)."""
    pytest.importorskip("onnxruntime")
    exe = shutil.which("speechperf", path=str(Path(sys.executable).parent))
    command = [exe, "loadgen", "-b", "onnxruntime", "--dataset-size", "2", "--duration", "1"]
    command += ["--log-dir", str(tmp_path / f"{name}-logs"), "--store", str(tmp_path / "store.sqlite")]
    command += ["-o", str(tmp_path / f"{name}.json"), "--markdown", str(tmp_path / f"{name}.md")]
    command += ["--csv", str(tmp_path / f"{name}.csv"), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def show(tmp_path: Path, result: str, name: str, *args: str):
    """``speechperf show RESULT`` with --markdown and --csv into ``name``.md / .csv."""
    md, csv = tmp_path / f"{name}.md", tmp_path / f"{name}.csv"
    shown = CliRunner().invoke(main, ["show", result, "--markdown", str(md), "--csv", str(csv), *args])
    assert shown.exit_code == 0, shown.output
    return shown.stdout, md.read_text(), csv.read_text()


def assert_shown_again(tmp_path: Path, name: str, done: subprocess.CompletedProcess) -> None:
    """``show`` on the JSON and on the stored id: the run's stdout, Markdown and CSV, byte for byte."""
    written = (done.stdout, (tmp_path / f"{name}.md").read_text(), (tmp_path / f"{name}.csv").read_text())
    assert show(tmp_path, str(tmp_path / f"{name}.json"), f"{name}-from-json") == written
    stored = re.search(r"stored as run (\d+) in ", done.stderr)
    assert stored is not None, done.stderr
    store = str(tmp_path / "store.sqlite")
    assert show(tmp_path, stored.group(1), f"{name}-from-store", "--store", store) == written


@pytest.mark.slow
def test_show_prints_and_writes_what_a_single_stream_run_did(tmp_path):
    done = loadgen(tmp_path, "single", "--scenario", "SingleStream")
    assert_shown_again(tmp_path, "single", done)
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
    assert_shown_again(tmp_path, "peak", done)
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
    stdout, markdown, csv = show(tmp_path, str(path), "v1", "-o", str(tmp_path / "v3.json"))
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
    assert show(tmp_path, str(tmp_path / "v3.json"), "v3") == (stdout, markdown, csv)
