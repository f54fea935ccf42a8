"""The README's main command, `speechperf bench --backend paddle` (the tiny reference S2T on generated speech), on
the real paddle inference predictor: its repeats show the first-call-per-shape cost, and the run says so instead of
calling it noise; with `--set general.warmup_per_shape=true` the cost leaves the repeats.

The machine may be shared with other busy processes, so the checks compare ratios of repeats of the same sample,
with tolerant thresholds, and a run whose repeats do not show what is checked is retried once. Each run is a
fresh process: paddle keeps part of what it prepared for a shape for the whole process (tests/perf/
first_call_per_shape.py), and a second run in one process showed no pattern.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.meters.runtime import NOISE_THRESHOLD

pytestmark = pytest.mark.slow
GONE = 1.15  # with per-shape warm-up, the first repeat is within this of the later ones (median over samples)


def bench(tmp_path: Path, *args: str) -> tuple[dict, str, str]:
    """The README's main command, in a fresh process (see the module docstring)."""
    out = tmp_path / "r.json"
    command = [sys.executable, "-m", "speechperf", "bench", "--backend", "paddle", "--meters", "runtime"]
    proc = subprocess.run([*command, "-o", str(out), "--quiet", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc.stdout, proc.stderr


def repeats(data: dict) -> list[dict]:
    return data["result"]["stages"][0]["runtime"]["samples"]


def first_over_later(samples: list[dict]) -> list[float]:
    """Per sample after the warm-up's (the first): its first repeat over the median of its later ones."""
    return [s["ns"][0] / statistics.median(s["ns"][1:]) for s in samples[1:]]


def shows_pattern(data: dict) -> bool:
    """docs/benchmark.md's rule, written again from its text: each new-shape sample's first repeat over the median
    of its later ones, minus 1, against 10% and twice the later ones' coefficient of variation; two thirds of the
    samples, and the medians the same way."""
    excess, spread = [], []
    for s in repeats(data)[1:]:
        later = s["ns"][1:]
        excess.append(s["ns"][0] / statistics.median(later) - 1)
        spread.append(statistics.stdev(later) / statistics.fmean(later))
    showing = sum(e > max(0.10, 2 * c) for e, c in zip(excess, spread))
    median_clear = statistics.median(excess) > max(0.10, 2 * statistics.median(spread))
    return showing >= 2 / 3 * len(excess) and median_clear


def test_the_default_paddle_run_names_the_first_call_per_shape_cost_not_noise(tmp_path):
    data, stdout, err = bench(tmp_path, "--wide")  # the column is one of --wide's
    runs = [data]
    if not shows_pattern(data):  # other processes may have blurred the repeats: once more
        data, stdout, err = bench(tmp_path, "--wide")
        runs.append(data)
    for run in runs:  # on every run, pattern or not, the figure is the one the repeats give
        samples = repeats(run)
        assert [len(s["ns"]) for s in samples] == [3, 3, 3, 3] and run["config"]["stage1"]["preset"] == "tiny"
        assert [s["new_shape"] for s in samples] == [False, True, True, True]  # the first sample's shape was warmed
        cost = run["result"]["stages"][0]["runtime"]["first_call_per_shape"]
        assert cost["source"] == "first repeats" and cost["considered"] == 3
        assert cost["excess"] == pytest.approx(statistics.median(first_over_later(samples)) - 1)
        assert cost["detected"] == shows_pattern(run)
    if not shows_pattern(data):
        pytest.skip(f"the machine is too busy for a clear pattern in two runs: first/later {first_over_later(samples)}")

    assert cost["detected"]
    total = data["rows"][-1]
    assert total["first_call_new_shape_detected"] is True
    assert total["first_call_new_shape_extra"] == round(cost["excess"], 3)
    pct = f"{total['first_call_new_shape_extra']:+.1%}"  # the note and the table say the column's value
    assert f"the first call on a new input shape costs {pct}" in err
    assert "1st call, new shape" in stdout and pct in stdout

    # The noise left: the later repeats of the new shapes, every repeat of the warmed sample.
    kept = [samples[0]["ns"]] + [s["ns"][1:] for s in samples[1:]]
    spreads = [statistics.stdev(ns) / statistics.fmean(ns) for ns in kept]
    if statistics.median(spreads) <= NOISE_THRESHOLD:
        assert "runtime is noisy" not in err
    else:  # busy machine: the note may stay, but it is about the later repeats and says so
        assert "first repeats left out" in err


def test_warmup_per_shape_removes_the_pattern_from_the_repeats(tmp_path):
    def gone(data):
        return statistics.median(first_over_later(repeats(data))) < GONE

    data, stdout, err = bench(tmp_path, "--set", "general.warmup_per_shape=true")
    if not gone(data):
        data, stdout, err = bench(tmp_path, "--set", "general.warmup_per_shape=true")
    samples = repeats(data)
    assert data["result"]["warmup_per_shape"] is True and "warmup 1 and per shape" in stdout
    assert [len(s["warmup_ns"]) for s in samples] == [0, 1, 1, 1]  # the first sample's shape had the warm-up
    if not gone(data):
        # Twice a slow first repeat: a busy machine shows it in the later repeats' own spread too; a quiet one
        # cannot, so there the test fails.
        spread = statistics.median(statistics.stdev(s["ns"][1:]) / statistics.fmean(s["ns"][1:]) for s in samples)
        if spread > NOISE_THRESHOLD:
            pytest.skip(f"the machine is too busy: later repeats vary by {spread:.0%}, {first_over_later(samples)}")
    assert gone(data), f"first repeat over the later ones: {first_over_later(samples)}"
    # The figure is now measured on each new shape's warm-up call against its timed repeats.
    warm = [s["warmup_ns"][0] / statistics.median(s["ns"]) for s in samples[1:]]
    cost = data["result"]["stages"][0]["runtime"]["first_call_per_shape"]
    assert cost["source"] == "per-shape warm-up" and cost["excess"] == pytest.approx(statistics.median(warm) - 1)
    if cost["detected"]:
        assert "warmed before timing, so not in the figures above" in err


def test_compare_has_the_column_from_its_children(tmp_path):
    """Two real paddle runs and one onnxruntime run: the column is the median over each cell's runs of the figure
    its children wrote, and the table shows it."""
    out = tmp_path / "c.json"
    result = CliRunner().invoke(
        main,
        ["compare", "--backends", "paddle,onnxruntime", "--runs", "2", "--meters", "runtime"]
        + ["--workdir", str(tmp_path / "w"), "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "1st call, new shape" in result.output
    data = json.loads(out.read_text())
    for row in data["rows"]:
        children = [
            json.loads(Path(r["json_path"]).read_text())["result"]["totals"]["first_call_per_shape"]
            for r in data["runs"]
            if r["label"] == row["cell"]
        ]
        assert len(children) == 2
        assert row["first_call_new_shape_extra"] == round(statistics.median(c["excess"] for c in children), 3)
        assert row["first_call_new_shape_detected"] == (sum(c["detected"] for c in children) == 2)
