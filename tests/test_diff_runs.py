"""``speechperf diff``'s statistic on fixed figures: the process run is the unit of the test.

Bench and compare documents are made here with known per-sample runtimes per process run; nothing is timed, so
every figure asserted is one the test wrote. The real runs are tests/test_diff_cli.py's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.results import Document
from speechperf.results.environment import is_busy

QUIET = {"busy_cores_others": 0.02, "busy_cores_own": 1.0, "cpu_count": 4, "loadavg_before": [0.1, 0.1, 0.1]}
LOADED = {"busy_cores_others": 1.01, "busy_cores_own": 1.0, "cpu_count": 4, "loadavg_before": [1.3, 1.1, 1.0]}


def run_diff(base: Path, new: Path, *args: str):
    from speechperf.cli import main

    return CliRunner().invoke(main, ["diff", str(base), str(new), *args])


def _seconds(per_sample_ms: list[float]) -> dict[str, float]:
    return {f"gen{i}": ms / 1e3 for i, ms in enumerate(per_sample_ms)}


def _result(per_sample_ms: list[float]) -> dict:
    """A bench ``result`` whose one stage's samples took these times (each repeat alike)."""
    ids = [f"gen{i}" for i in range(len(per_sample_ms))]
    samples = [{"sample_id": i, "ns": [round(ms * 1e6)] * 3} for i, ms in zip(ids, per_sample_ms)]
    return {
        "samples": ids,
        "threads": 1,
        "warmup": 1,
        "repeat": 3,
        "backend": "onnxruntime",
        "device": "cpu",
        "stages": [{"index": 1, "role": "s2t", "runtime": {"samples": samples}, "memory": {"peak_mib": 100.0}}],
        "totals": {"per_sample_s": _seconds(per_sample_ms)},
    }


def bench_doc(
    path: Path, runs: list[list[float]], load: dict | None = None, peak_mib: float = 100.0, wait: float | None = None
) -> Path:
    """A bench document of ``len(runs)`` process runs, each one's per-sample runtimes in ms; one run is written as a
    plain bench (schema version 2 before --runs) writes it: no ``runs``. ``wait``: each run's ``wait_share``."""
    body: dict = {"result": _result(runs[0])}
    if len(runs) > 1:
        body["process_runs"] = len(runs)
        body["runs"] = [
            {
                "run": i,
                "ok": True,
                "load": load,
                "per_sample_s": {"stage1 s2t": _seconds(ms), "total": _seconds(ms)},
                **({} if wait is None else {"wait_share": wait}),
            }
            for i, ms in enumerate(runs)
        ]
    rows = [{"stage": name, "peak_rss_mib": peak_mib} for name in ("stage1 s2t", "total")]
    env = {"threads": 1, "backend": "onnxruntime", **({"load": load} if load else {})}
    Document(kind="bench", rows=rows, body=body, complete=True, environment=env, config={}).write(path)
    return path


FAST = [10.0, 10.2, 9.8, 10.1]
SLOW = [20.0, 20.4, 19.6, 20.2]  # 2x FAST


def test_one_process_per_side_prints_the_ratio_and_never_exits_1_on_it(tmp_path):
    base, new = bench_doc(tmp_path / "a.json", [FAST]), bench_doc(tmp_path / "b.json", [SLOW])
    done = run_diff(base, new, "--fail-above", "5%")
    assert done.exit_code == 0, done.output
    row = next(line for line in done.output.splitlines() if "│ total" in line)
    assert "2.00" in row and "(n=1)" in row and "not gated (no test)" in row and "REGRESSION" not in row
    assert "no significance test: one process per side" in done.output
    # asked for: the samples of one process as the unit, which the user says is what they want
    sample = run_diff(base, new, "--fail-above", "5%", "--sample-level")
    assert sample.exit_code == 1, sample.output
    assert "(n=4)" in sample.output and "REGRESSION" in sample.output and "sample-level test" in sample.output


def test_three_runs_per_side_clearly_different_exit_1_and_alike_exit_0(tmp_path):
    base = bench_doc(tmp_path / "a.json", [FAST, [10.1, 10.3, 9.9, 10.0], [9.9, 10.0, 9.7, 10.2]], QUIET)
    slow = bench_doc(tmp_path / "b.json", [SLOW, [20.2, 20.1, 19.9, 20.0], [19.8, 20.5, 19.7, 20.1]], QUIET)
    alike = bench_doc(tmp_path / "c.json", [[10.0, 10.1, 9.9, 10.2], FAST, [10.2, 10.0, 9.8, 10.1]], QUIET)
    done = run_diff(base, slow, "--fail-above", "5%")
    assert done.exit_code == 1, done.output
    row = next(line for line in done.output.splitlines() if "│ total" in line)
    assert "(n=3)" in row and "REGRESSION" in row
    assert "statistical unit: one process run" in done.output and "no significance test" not in done.output
    same = run_diff(base, alike, "--fail-above", "5%")
    assert same.exit_code == 0 and "REGRESSION" not in same.output, same.output
    # two runs on one side, one on the other: no test, whatever the ratio
    one = bench_doc(tmp_path / "d.json", [SLOW])
    mixed = run_diff(base, one, "--fail-above", "5%")
    assert mixed.exit_code == 0 and "1 run(s) on NEW, a test needs 2 per side" in mixed.output, mixed.output


def test_diff_warns_in_one_line_when_the_two_sides_timed_under_different_loads(tmp_path):
    runs = [FAST, [10.1, 10.3, 9.9, 10.0], [9.9, 10.0, 9.7, 10.2]]
    quiet, loaded = bench_doc(tmp_path / "a.json", runs, QUIET), bench_doc(tmp_path / "b.json", runs, LOADED)
    done = run_diff(quiet, loaded, "--fail-above", "5%")
    assert done.exit_code == 0, done.output
    (line,) = [ln for ln in done.output.splitlines() if "different loads" in ln]
    assert "BASE other processes kept 0.02 of 4 cores busy, 3.98 idle (load average 0.10; 0 of 3" in line
    assert "NEW other processes kept 1.01 of 4 cores busy, 2.99 idle (load average 1.30; 0 of 3" in line
    assert "different loads" not in run_diff(quiet, quiet).output  # the same load: nothing to say
    # a 2-core machine already near full: a busy loop adds a quarter core to the others' figure, halves the idle
    near_full = {**QUIET, "cpu_count": 2, "busy_cores_others": 1.5}
    fuller = bench_doc(tmp_path / "c.json", runs, {**near_full, "busy_cores_others": 1.75})
    full = bench_doc(tmp_path / "d.json", runs, near_full)
    assert "0.25 idle" in next(ln for ln in run_diff(full, fuller).output.splitlines() if "different loads" in ln)


def test_a_slowdown_under_a_different_load_is_not_gated_unless_asked(tmp_path):
    """The same code timed once on a quiet machine and once beside a busy loop: three runs a side, a clear 2x,
    p < 0.05, and still not the code's doing. diff warns, marks the row and exits 0; --gate-under-load gates it.
    Peak RSS, which the load does not move, is gated as always."""
    quiet = bench_doc(tmp_path / "a.json", [FAST, [10.1, 10.3, 9.9, 10.0], [9.9, 10.0, 9.7, 10.2]], QUIET)
    slow = [SLOW, [20.2, 20.1, 19.9, 20.0], [19.8, 20.5, 19.7, 20.1]]
    loaded = bench_doc(tmp_path / "b.json", slow, LOADED, peak_mib=150.0)
    done = run_diff(quiet, loaded, "--fail-above", "5%", "-o", str(tmp_path / "d.json"))
    assert done.exit_code == 0, done.output
    row = next(line for line in done.output.splitlines() if "│ total" in line)
    assert "not gated (loads differ)" in row and "REGRESSION" not in row
    assert "different loads" in done.output and "--gate-under-load to gate it anyway" in done.output
    written = json.loads((tmp_path / "d.json").read_text())
    assert written["loads_differ"] is True and written["exit_code"] == 0
    assert {r["verdict"] for r in written["rows"]} == {"not gated (loads differ)"}
    asked = run_diff(quiet, loaded, "--fail-above", "5%", "--gate-under-load")
    assert asked.exit_code == 1 and "REGRESSION" in asked.output, asked.output
    memory = run_diff(quiet, loaded, "--fail-above", "10%", "--fail-metric", "peak_rss")
    assert memory.exit_code == 1 and "REGRESSION" in memory.output, memory.output
    # the same slowdown under the same load is gated: the rule is about the load, not the ratio
    same_load = bench_doc(tmp_path / "c.json", slow, QUIET)
    assert run_diff(quiet, same_load, "--fail-above", "5%").exit_code == 1


def test_memory_is_gated_on_its_ratio(tmp_path):
    base = bench_doc(tmp_path / "a.json", [FAST], peak_mib=100.0)
    grown = bench_doc(tmp_path / "b.json", [FAST], peak_mib=120.0)
    assert run_diff(base, grown, "--fail-above", "50%", "--fail-metric", "peak_rss").exit_code == 0
    done = run_diff(base, grown, "--fail-above", "10%", "--fail-metric", "peak_rss")
    assert done.exit_code == 1 and "REGRESSION" in done.output, done.output


def compare_doc(path: Path, per_run_ms: list[float]) -> Path:
    """A compare document of one cell, onnxruntime, whose runs' samples took these times (two samples alike)."""
    runs = [
        {"label": "onnxruntime", "run": i, "ok": True, "timings": {"per_sample_s": {"a": ms / 1e3, "b": ms / 1e3}}}
        for i, ms in enumerate(per_run_ms)
    ]
    body = {"runs": runs, "cells": [{"label": "onnxruntime"}]}
    Document(kind="compare", rows=[{"cell": "onnxruntime"}], body=body, complete=True).write(path)
    return path


def test_compare_cells_are_tested_over_their_runs(tmp_path):
    base, slow = compare_doc(tmp_path / "a.json", [10.0, 10.2, 9.9]), compare_doc(tmp_path / "b.json", [20, 20.3, 19.8])
    done = run_diff(base, slow, "--fail-above", "5%")
    assert done.exit_code == 1, done.output
    row = next(ln for ln in done.output.splitlines() if "│ onnxruntime" in ln)
    assert "REGRESSION" in row and "(n=3)" in row
    one, one_slow = compare_doc(tmp_path / "c.json", [10.0]), compare_doc(tmp_path / "d.json", [20.0])
    single = run_diff(one, one_slow, "--fail-above", "5%")
    assert single.exit_code == 0 and "one process per side" in single.output, single.output


def test_a_machine_is_busy_when_other_processes_leave_the_run_too_few_cores():
    assert is_busy(1.52, 2, 0.48)  # this 2-core VM with a build beside the run
    assert not is_busy(1.0, 16, 1.0)  # one busy loop on a 16-core machine leaves cores to spare
    assert not is_busy(0.5, 2, 1.0)  # half a core: under the threshold


def test_diff_writes_a_diff_document_with_the_gate_it_printed(tmp_path):
    """`diff -o`: the comparison as a result document (kind diff): the figures, the test and the exit code."""
    from speechperf.results import read

    base = bench_doc(tmp_path / "a.json", [FAST, [10.1, 10.3, 9.9, 10.0], [9.9, 10.0, 9.7, 10.2]], QUIET)
    slow = bench_doc(tmp_path / "b.json", [SLOW, [20.2, 20.1, 19.9, 20.0], [19.8, 20.5, 19.7, 20.1]], QUIET)
    out, md = tmp_path / "d.json", tmp_path / "d.md"
    done = run_diff(base, slow, "--fail-above", "5%", "-o", str(out), "--markdown", str(md))
    assert done.exit_code == 1, done.output
    doc = read(out, kinds=("diff",))
    assert doc["exit_code"] == 1 and doc["compared_kind"] == "bench" and doc["fail_above"] == 0.05
    total = next(r for r in doc.rows if r["unit"] == "total")
    assert total["verdict"] == "REGRESSION" and total["tested_over"] == "run" and total["new_units"] == 3
    assert total["new_over_base"] == pytest.approx(2.0, rel=0.05) and total["p_value"] < 0.05
    assert "REGRESSION" in md.read_text()


def _tight(level_ms: float) -> list[list[float]]:
    """Three process runs a side, back to back: their means within 0.1% of ``level_ms`` (sigma about 0.01 ms)."""
    return [[level_ms * f] * 4 for f in (0.999, 1.0, 1.001)]


def test_two_tight_sides_8_percent_apart_are_drift_not_a_regression(tmp_path):
    """The issue's false alarm: each side's three processes ran back to back, so their spread (0.1%) says nothing of
    how far the machine moved between the two sessions (5-8% here). Welch's p over the runs alone is tiny; the gate's
    bound, with the between-session drift (3% a side), stays under the threshold: not significant, exit 0. With
    --drift 0 the old gate comes back and calls it a regression."""
    base, new = bench_doc(tmp_path / "a.json", _tight(10.0), QUIET), bench_doc(tmp_path / "b.json", _tight(10.8), QUIET)
    out = tmp_path / "d.json"
    done = run_diff(base, new, "--fail-above", "5%", "-o", str(out))
    assert done.exit_code == 0, done.output
    row = next(line for line in done.output.splitlines() if "│ total" in line)
    assert "not significant" in row and "drift of 3.0% per side" in done.output
    total = next(r for r in json.loads(out.read_text())["rows"] if r["unit"] == "total")
    assert total["p_value"] < 1e-4 and total["new_over_base"] == pytest.approx(1.08)
    assert 1.0 < total["worse_low"] < 1.05  # the lower bound: 1.08 * exp(-1.645 * sqrt(2 * 0.03**2 + tiny))
    assert run_diff(base, new, "--fail-above", "5%", "--drift", "0").exit_code == 1
    # a real 1.5x stays a regression with the drift allowed for
    slow = bench_doc(tmp_path / "c.json", _tight(15.0), QUIET)
    assert run_diff(base, slow, "--fail-above", "5%").exit_code == 1
    bad = run_diff(base, new, "--drift", "70%")
    assert bad.exit_code == 2 and "--drift '70%': must be a finite percentage from 0% to 50%" in bad.output


def test_a_side_whose_runs_waited_for_a_cpu_is_flagged_and_not_gated(tmp_path):
    """Other processes' busy cores the same on both sides (so no load warning), but NEW's own thread waited
    runnable for a CPU 4% of its timed time: its slowdown is the machine's. Not gated unless --gate-under-load."""
    base = bench_doc(tmp_path / "a.json", _tight(10.0), LOADED, wait=0.0002)
    new = bench_doc(tmp_path / "b.json", _tight(15.0), LOADED, wait=0.04)
    out = tmp_path / "d.json"
    done = run_diff(base, new, "--fail-above", "5%", "-o", str(out))
    assert done.exit_code == 0, done.output
    (line,) = [ln for ln in done.output.splitlines() if ln.startswith("warning:") and "waited for a CPU" in ln]
    assert "NEW waited" in line and "BASE 0.0%, NEW 4.0%" in line and "different loads" not in done.output
    row = next(ln for ln in done.output.splitlines() if "│ total" in ln)
    assert "not gated (waited for a CPU)" in row
    written = json.loads(out.read_text())
    assert written["waited"] is True and written["wait_share"] == {"base": 0.0002, "new": 0.04}
    assert run_diff(base, new, "--fail-above", "5%", "--gate-under-load").exit_code == 1
    # under 1% of waiting is no contention: gated
    calm = bench_doc(tmp_path / "c.json", _tight(15.0), LOADED, wait=0.005)
    assert run_diff(base, calm, "--fail-above", "5%").exit_code == 1
    # a BASE that waited is only slower: it can hide a regression, not make one, so the gate still runs
    waited_base = bench_doc(tmp_path / "e.json", _tight(10.0), LOADED, wait=0.13)
    caught = run_diff(waited_base, calm, "--fail-above", "5%")
    assert caught.exit_code == 1 and "BASE waited" in caught.output and "the gate still runs" in caught.output


def test_the_lower_bound_widens_with_the_drift_and_the_runs_spread():
    from speechperf.stats import ratio_lower_bound

    tight = ratio_lower_bound([10.0, 10.01, 9.99], [10.8, 10.81, 10.79], drift=0.0)
    assert tight is not None and tight.low == pytest.approx(1.08, abs=0.003)  # the runs' spread alone: 0.1%
    drifted = ratio_lower_bound([10.0, 10.01, 9.99], [10.8, 10.81, 10.79], drift=0.03)
    assert drifted is not None and drifted.low == pytest.approx(
        1.08 * math.exp(-1.6449 * math.sqrt(2) * 0.03), rel=1e-3
    )
    spread = ratio_lower_bound([10.0, 11.0, 9.0], [10.8, 11.8, 9.8], drift=0.03)
    assert spread is not None and spread.low < drifted.low and spread.df < drifted.df
    assert ratio_lower_bound([10.0], [10.8, 10.9]) is None
    assert ratio_lower_bound([10.0, 10.0], [10.8, 10.8]) is None  # nothing uncertain, nothing allowed for
