"""``compare --scenario``: real LoadGen on real backends (the silero VAD over the LibriVox clips), each backend's
``speechperf loadgen`` in its own process, ranked by samples/s (Offline) or peak QPS (Server); the hostile options,
one line with exit 2 before any child runs; Ctrl-C keeps what was measured.

Fast settings (1 s duration, a few queries): every row is marked not MLPerf-compliant, which is checked.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.tables import significant
from tests.test_loadgen import needs_librivox, vad_args

pytest.importorskip("mlperf_loadgen", reason='needs the loadgen extra: pip install "speechperf[loadgen]"')
pytest.importorskip("onnxruntime")
pytest.importorskip("torch")
EXE = shutil.which("speechperf", path=str(Path(sys.executable).parent))


def compare_command(tmp_path: Path, *args: str) -> list[str]:
    return [
        EXE,
        "compare",
        "--backends",
        "onnxruntime,torch",
        *vad_args(tmp_path, "onnxruntime")[2:],  # the config and the LibriVox manifest, without -b
        "--dataset-type",
        "raw",
        "--workdir",
        str(tmp_path / "work"),
        "-o",
        str(tmp_path / "out.json"),
        "--no-store",  # the store has its own test below
        *args,
    ]


def compare(tmp_path: Path, *args: str, timeout: int = 240) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run(compare_command(tmp_path, *args), capture_output=True, text=True, timeout=timeout)
    out = tmp_path / "out.json"
    return done, (json.loads(out.read_text()) if out.is_file() else {})


def check_rows_come_from_their_own_processes(data: dict) -> None:
    pids = [row["pid"] for row in data["rows"]]
    assert len(set(pids)) == len(pids) and os.getpid() not in pids
    for row in data["results"]:  # the pid each child recorded itself is the one its row names
        assert json.loads(Path(row["json_path"]).read_text())["pid"] == row["pid"]


@pytest.mark.slow
@needs_librivox
def test_offline_ranks_backends_by_samples_per_s_each_in_a_fresh_process(tmp_path):
    done, data = compare(
        tmp_path, "--dataset-size", "3", "--scenario", "Offline", "--duration", "1", "--csv", str(tmp_path / "out.csv")
    )
    assert done.returncode == 0, done.stderr
    rows = data["rows"]
    assert data["kind"] == "serving" and data["complete"] is True and data["ranked_by"]["metric"] == "samples_per_s"
    assert all(r["metric"] == "samples_per_s" and r["audio_s_per_s"] > 0 for r in rows)  # figures.py's names
    assert sorted(r["backend"] for r in rows) == ["onnxruntime", "torch"]
    assert [r["rank"] for r in rows] == [1, 2]
    assert rows[0]["samples_per_s"] >= rows[1]["samples_per_s"] > 0  # the order is the samples/s of the rows
    ratio = rows[0]["samples_per_s"] / rows[1]["samples_per_s"]
    assert rows[0]["vs_best"] == 1.0 and rows[1]["vs_best"] == pytest.approx(ratio, 1e-2)
    check_rows_come_from_their_own_processes(data)
    for row, raw in zip(rows, data["results"], strict=True):
        assert row["result"] in ("VALID", "INVALID") and row["mlperf"] == "not MLPerf-compliant"
        assert "not MLPerf-compliant: duration 1 s < 600 s" in row["compliance"]
        child = json.loads(Path(raw["json_path"]).read_text())
        assert child["runs"][0]["summary"]["samples_per_s"] == pytest.approx(row["samples_per_s"], abs=0.01)
        assert (Path(raw["log_dir"]) / "Offline-performance" / "mlperf_log_summary.txt").is_file()
    assert "speechperf compare --scenario Offline: ranked by samples/s, higher first" in done.stdout
    assert f"{rows[1]['cell']}: not MLPerf-compliant: duration 1 s < 600 s" in done.stdout
    table = list(csv.DictReader(io.StringIO((tmp_path / "out.csv").read_text())))
    assert [(r["rank"], r["cell"], r["result"]) for r in table] == [
        (str(r["rank"]), r["cell"], r["result"]) for r in rows
    ]


@pytest.mark.slow
@needs_librivox
def test_multistream_children_get_the_samples_per_query_asked_for(tmp_path):
    done, data = compare(
        tmp_path, "--dataset-size", "3", "--scenario", "MultiStream", "--samples-per-query", "2", "--duration", "1"
    )
    assert done.returncode == 0, done.stderr
    assert data["ranked_by"]["metric"] == "p99_ms" and len(data["rows"]) == 2  # MultiStream's MLPerf percentile
    assert all(row["p99_ms"] > 0 for row in data["rows"])
    for row, raw in zip(data["rows"], data["results"], strict=True):
        assert "not MLPerf-compliant: samples per query 2 != 8" in row["compliance"]
        summary = (Path(raw["log_dir"]) / "MultiStream-performance" / "mlperf_log_summary.txt").read_text()
        assert "samples_per_query : 2" in summary  # LoadGen's own record of what it sent


@pytest.mark.slow
@needs_librivox
def test_server_ranks_backends_by_the_peak_qps_their_searches_found(tmp_path):
    # p50 and 20 queries: LoadGen's early stopping lets a short trial be VALID (p99 would need about 460 queries)
    done, data = compare(
        tmp_path,
        "--dataset-size",
        "2",
        "--scenario",
        "Server",
        "--target-latency-ms",
        "1000",
        "--percentile",
        "50",
        "--min-queries",
        "20",
        "--duration",
        "1",
        "--budget",
        "5",
        "--markdown",
        str(tmp_path / "out.md"),
    )
    assert done.returncode == 0, done.stderr
    rows = data["rows"]
    check_rows_come_from_their_own_processes(data)
    ranked = [r for r in rows if r["rank"] is not None]
    assert ranked, done.stdout  # silero answers within 1 s at a low rate on every backend
    assert [r["peak_qps"] for r in ranked] == sorted((r["peak_qps"] for r in ranked), reverse=True)
    for row, raw in zip(rows, data["results"], strict=True):
        child = json.loads(Path(raw["json_path"]).read_text())
        valid = [run for run in child["runs"] if run["summary"]["valid"]]
        # no trial at all: the search stopped before one (a warm-up query slower than the bound on a loaded machine)
        assert row["result"] == ("VALID" if valid else "INVALID" if child["runs"] else "NO VALID RATE")
        if not child["runs"]:
            assert child["peak"]["stopped"] and row["peak_qps"] is None
            continue
        best = max(valid, key=lambda run: run["summary"]["scheduled_qps"]) if valid else None
        # MLPerf's Server figure: LoadGen's scheduled samples/s of the best VALID trial, its target rate beside it
        assert row["peak_qps"] == (pytest.approx(best["summary"]["scheduled_qps"], rel=1e-3) if best else None)
        assert row["target_qps"] == (pytest.approx(best["target_qps"], rel=1e-3) if best else None)
        assert child["peak"]["trials"] == row["trials"] == len(child["runs"])
        missed_above = [
            r for r in child["runs"] if r["summary"]["latency_missed"] and best and r["target_qps"] > best["target_qps"]
        ]
        assert row["lower_bound"] is (bool(valid) and not missed_above)
        if row["lower_bound"]:  # printed from the unrounded figure (the row's is rounded: 16.1503 -> 16.15 -> "16.1")
            assert (
                f"{row['cell']}: peak {significant(raw['metric'])} scheduled samples/s (LoadGen's) is a lower bound"
                in done.stdout
            )
            assert raw["metric"] == pytest.approx(row["peak_qps"], abs=0.01)  # the row keeps 2 decimals
        assert row["target_latency_ms"] == 1000 and "not MLPerf-compliant: percentile p50 != p99" in row["compliance"]
    assert "p50 (ms) at the peak (<= 1000 ms)" in done.stdout
    assert (tmp_path / "out.md").read_text().startswith("| rank | cell | backend |")


@pytest.mark.slow
def test_scenario_html_has_the_table_and_the_percentile_plot_and_the_store_keeps_the_run(tmp_path):
    """Before issue 33 `compare --scenario ... --html r.html --store s.sqlite` exited 0 and wrote neither."""
    page, store, out = tmp_path / "r.html", tmp_path / "s.sqlite", tmp_path / "out.json"
    command = [EXE, "compare", "--backends", "onnxruntime", "--preset", "tiny", "--dataset-size", "2"]
    command += ["--scenario", "Offline", "--duration", "1", "--workdir", str(tmp_path / "work"), "-o", str(out)]
    done = subprocess.run([*command, "--html", str(page), "--store", str(store)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    text = page.read_text()
    from speechperf.results.figures import shown

    assert "<h1>speechperf compare --scenario Offline: S2T</h1>" in text  # the page's title
    assert f">{shown('samples_per_s', row['samples_per_s'])}<" in text  # rounded as the console rounds it
    assert re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,', text) == ["percentiles.png"]
    with sqlite3.connect(store) as db:
        (command_name, result), *more = db.execute("SELECT command, result FROM runs").fetchall()
        assert not more and command_name == "serving" and json.loads(result)["rows"] == data["rows"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--scenario", "Bogus"], "'Bogus' is not one of 'SingleStream', 'MultiStream', 'Server', 'Offline'"),
        (["--scenario", "Server", "--target-latency-ms", "0"], "--target-latency-ms"),
        (["--scenario", "Server", "--target-latency-ms", "nan"], "'nan' is not a finite number"),
        (["--scenario", "Offline", "--duration", "inf"], "--duration"),
        (["--scenario", "Server", "--target-qps", "5"], "--target-qps: compare --scenario Server searches"),
        (["--scenario", "Offline", "--budget", "5"], "--budget: the peak search's, only with --scenario Server"),
        (["--scenario", "Offline", "--runs", "2"], "--runs: not used with --scenario Offline"),
        (["--scenario", "Offline", "--instances", "10000"], "--instances 10000: 10000 instance(s) x 1 thread(s)"),
        (["--target-latency-ms", "500"], "--target-latency-ms: needs --scenario"),
        (
            ["--scenario", "Offline", "--samples-per-query", "2"],
            "--samples-per-query: only with --scenario MultiStream",
        ),
        (["--scenario", "MultiStream", "--samples-per-query", "0"], "--samples-per-query"),
    ],
)
def test_hostile_scenario_options_are_one_line_with_exit_2_before_any_child(tmp_path, args, expected):
    work = tmp_path / "work"
    result = CliRunner().invoke(main, ["compare", "--backends", "onnxruntime", "--workdir", str(work), *args])
    assert result.exit_code == 2, result.output
    assert expected in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert not work.exists() or not any(work.iterdir())  # no child ran


def _wait_for(path_glob, folder: Path, proc: subprocess.Popen, count: int = 1, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while len(list(folder.glob(path_glob))) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"no {path_glob} under {folder}"
        time.sleep(0.2)


@pytest.mark.slow
@needs_librivox
def test_ctrl_c_in_a_server_peak_search_keeps_loadgen_logs_and_what_was_measured(tmp_path):
    logs, out = tmp_path / "logs", tmp_path / "out.json"
    command = [EXE, "loadgen", *vad_args(tmp_path, "onnxruntime"), "--dataset-type", "raw", "--dataset-size", "2"]
    command += ["--scenario", "Server", "--find-peak", "--budget", "300", "--duration", "3", "--min-queries", "10"]
    command += ["--percentile", "50", "--log-dir", str(logs), "-o", str(out)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for("peak-*/mlperf_log_summary.txt", logs, proc)  # trial 1 done
    _wait_for("peak-*", logs, proc, count=2)  # trial 2 is being served
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert (
        err.strip().splitlines()[-1]
        == f"interrupted; LoadGen's logs are in {logs}; what was measured is in the exports"
    )
    data = json.loads(out.read_text())
    assert data["complete"] is False and "peak" not in data
    first = data["runs"][0]
    assert first["complete"] is True and first["summary"]["result"] in ("VALID", "INVALID")
    for run in data["runs"]:
        assert (Path(run["log_dir"]) / "mlperf_log_detail.txt").stat().st_size > 0


@pytest.mark.slow
@needs_librivox
def test_ctrl_c_in_compare_scenario_interrupts_the_child_and_keeps_its_rows(tmp_path):
    command = compare_command(tmp_path, "--scenario", "Server", "--budget", "300", "--duration", "3")
    command += ["--percentile", "50", "--min-queries", "10", "--dataset-size", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child_logs = tmp_path / "work" / "onnxruntime" / "loadgen-logs"
    _wait_for("*/peak-*/mlperf_log_summary.txt", child_logs, proc)  # onnxruntime's trial 1 done (a fresh folder)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"interrupted; what was measured is in {tmp_path / 'out.json'}")
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["complete"] is False
    (row,) = data["results"]  # torch never started
    assert row["backend"] == "onnxruntime" and row["complete"] is False and row["trials"] >= 1
    child = json.loads(Path(row["json_path"]).read_text())
    assert child["complete"] is False and child["pid"] == row["pid"]  # the child wrote its part before it ended
    assert any(child_logs.glob("*/peak-*/mlperf_log_detail.txt"))


def test_mlperf_conf_files_reach_every_child_as_paths(tmp_path):
    from speechperf.compare.serving import ServingOptions

    args = ServingOptions("Server", user_conf="/x/user.conf", audit_conf="/x/audit.config").loadgen_args()
    assert args[args.index("--user-conf") + 1] == "/x/user.conf"
    assert args[args.index("--audit-conf") + 1] == "/x/audit.config"
    assert "--user-conf" not in ServingOptions("Server").loadgen_args()
