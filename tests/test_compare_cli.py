"""``speechperf compare`` as a user runs it: real child processes on torch, paddle and onnxruntime, the ranking,
its statistics recomputed by hand from the children's own JSON, the parity line, the exports and the plot, a child
killed with SIGKILL, a timeout, and one clear line for each kind of bad input."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from tests.show_again import assert_shown_again, stored_id

REPO = Path(__file__).resolve().parents[1]
S2T_TINY = [
    "--config",
    str(REPO / "configs" / "S2T.yaml"),
    "--preset",
    "tiny",
    "--dataset-size",
    "2",
    "--repeat",
    "1",
    "--warmup",
    "1",
]

#: The built-in default (no --config: the tiny S2T on generated data), 2 samples, one timed forward each.
DEFAULT_TINY = ["--dataset-size", "2", "--repeat", "1", "--warmup", "1"]


def compare_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "speechperf", "compare", *args]


@pytest.fixture(scope="module")
def three_backends(tmp_path_factory):
    """One real comparison on every backend, every meter, 2 runs, with every export.

    It compares the built-in default (the tiny S2T, greedy decoding of at most 20 tokens, not S2T.yaml's 50) on 2
    samples: counting FLOPs is most of a child's time (paddle traces a program per decoder step's shapes), and the
    counts are kept in the run's cache by model and shapes (speechperf.meters.flops_cache), so this comparison's
    counts and those of the other tests of the default on 2 samples (test_bench_cli's FLOPs test) are made once."""
    out = tmp_path_factory.mktemp("compare")
    paths = {"json": out / "c.json", "csv": out / "c.csv", "md": out / "c.md", "png": out / "c.png"}
    paths["store"] = out / "store.sqlite"
    proc = subprocess.run(
        compare_cmd(
            *DEFAULT_TINY,
            "--backends",
            "torch,paddle,onnxruntime",
            "--runs",
            "2",
            "--workdir",
            str(out / "work"),
            "-o",
            str(paths["json"]),
            "--csv",
            str(paths["csv"]),
            "--markdown",
            str(paths["md"]),
            "--plot",
            str(paths["png"]),
            "--store",
            str(paths["store"]),
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, paths, json.loads(paths["json"].read_text())


def _run_values(data: dict, label: str) -> list[float]:
    """Recomputed from the child's own bench JSON: the mean per-sample runtime of each run."""
    values = []
    for run in data["runs"]:
        if run["label"] == label:
            bench = json.loads(Path(run["json_path"]).read_text())
            values.append(statistics.fmean(bench["result"]["totals"]["per_sample_s"].values()))
    return values


@pytest.mark.slow
def test_ranked_table_ratios_and_parity_on_three_backends(three_backends):
    proc, _, data = three_backends
    out = proc.stdout
    for label in ("torch", "paddle", "onnxruntime"):
        assert f"Cell: {label} (2 of 2 runs finished, 1 thread(s))" in out
    assert out.count("Time (mean ± σ):") == 3 and out.count("Range (min … max):") == 3
    means = {s["cell"]: s["mean_ms"] for s in data["rows"]}
    fastest = min(means, key=means.get)
    sentences = [line.strip() for line in out.splitlines() if " times faster than " in line]
    assert len(sentences) == 2 and all(s.startswith(f"{fastest} ran ") for s in sentences)
    assert all(" ± " in s and "p = " in s for s in sentences)
    # every stage output is compared against the reference (the first backend): greedy decoding of the same
    # weights gives the same tokens on every backend
    assert data["parity"]["torch"]["reference"] == "torch"
    for label in ("paddle", "onnxruntime"):
        parity = data["parity"][label]
        assert parity["mismatch"] is False
        assert parity["outputs"] == [
            {"stage": "stage1", "name": "tokens", "exact": True, "samples": 2, "differing": 0, "max_abs": None}
        ]
    assert out.count("stage1 tokens identical") == 2
    assert "statistical unit: one process run" in out


@pytest.mark.slow
def test_statistics_are_those_of_the_children_results(three_backends):
    _, _, data = three_backends
    from scipy.stats import ttest_ind

    values = {label: _run_values(data, label) for label in ("torch", "paddle", "onnxruntime")}
    rows = {s["cell"]: s for s in data["rows"]}
    for label, runs in values.items():
        assert len(runs) == 2
        assert rows[label]["mean_ms"] == pytest.approx(statistics.fmean(runs) * 1e3, abs=1e-3)
        assert rows[label]["stdev_ms"] == pytest.approx(statistics.stdev(runs) * 1e3, abs=1e-3)
        assert rows[label]["min_ms"] == pytest.approx(min(runs) * 1e3, abs=1e-3)
    fastest = min(values, key=lambda k: statistics.fmean(values[k]))
    comparisons = {c["slow"]: c for c in data["comparisons"][0]}
    assert set(comparisons) == set(values) - {fastest}
    f = values[fastest]
    for slow, c in comparisons.items():
        s = values[slow]
        ratio = statistics.fmean(s) / statistics.fmean(f)
        sigma = ratio * math.sqrt(
            (statistics.stdev(f) / statistics.fmean(f)) ** 2 + (statistics.stdev(s) / statistics.fmean(s)) ** 2
        )
        assert c["fast"] == fastest and c["ratio"] == pytest.approx(ratio) and c["sigma"] == pytest.approx(sigma)
        assert c["p_value"] == pytest.approx(float(ttest_ind(f, s, equal_var=False).pvalue))
        assert c["significant"] == (c["p_value"] < 0.05)
    # FLOPs are counted by each child and agree across backends (the same model, analytic counts)
    assert len({rows[k]["gflops_per_sample"] for k in values}) == 1 and rows["torch"]["gflops_per_sample"] > 0


@pytest.mark.slow
def test_exports_json_csv_markdown_and_plot(three_backends):
    _, paths, data = three_backends
    assert (
        data["kind"] == "compare"
        and data["schema_version"] == 4
        and data["complete"] is True
        and data["runs_per_cell"] == 2
    )
    assert data["options"]["backends_text"] == "torch,paddle,onnxruntime" and data["options"]["runs"] == 2
    assert data["config"]["general"]["model_type"] == "S2T" and data["config"]["stage1"]["preset"] == "tiny"
    assert len(data["runs"]) == 6 and [r["label"] for r in data["runs"][:3]] == ["torch", "paddle", "onnxruntime"]
    for run in data["runs"]:
        assert run["ok"] and run["exit_code"] == 0 and run["pid"] > 0
        assert run["environment"]["backend"] == run["label"] and run["environment"]["threads"] == 1
        raw = run["timings"]["stages"][0]["ns"]
        assert sorted(raw) == ["gen0", "gen1"] and all(len(v) == 1 and v[0] > 0 for v in raw.values())
    with paths["csv"].open() as handle:
        table = list(csv.DictReader(handle))
    assert [row["backend"] for row in table] == ["torch", "paddle", "onnxruntime"]
    assert all(float(row["mean_ms"]) > 0 for row in table)
    md = paths["md"].read_text().splitlines()
    assert md[0].startswith("| cell | backend | threads |") and len(md) == 5
    assert md[3].split(" | ")[1] == "paddle"
    png = paths["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


@pytest.mark.slow
def test_show_prints_and_writes_what_the_compare_did_from_its_json_and_its_stored_id(three_backends, tmp_path):
    """The show test of compare documents (tests/test_show_compare.py's others: compare --scenario, older files)."""
    proc, paths, doc = three_backends
    sources = [paths["json"], stored_id(proc, "compare")]
    assert_shown_again(proc.stdout, paths["json"].with_suffix(""), sources, "--store", paths["store"], into=tmp_path)
    assert doc["kind"] == "compare" and doc["complete"] is True
    # the ranking's sentences and each cell's block, as the document's comparisons and rows say them
    for comparison in doc["comparisons"][0]:
        assert f"  {comparison['sentence']}" in proc.stdout.splitlines()
    for row in doc["rows"]:
        assert f"Cell: {row['cell']} (2 of 2 runs finished, 1 thread(s))" in proc.stdout
    # the note on what a plain compare ranks is printed and kept, once
    note = next(line for line in proc.stdout.splitlines() if line.startswith("note: this compares"))
    assert doc["notes"].count(note.removeprefix("note: ")) == 1


@pytest.mark.slow
def test_svg_plot_parses(three_backends, tmp_path):
    """The plot from the saved document: its cells drawn as SVG."""
    from speechperf.results import read
    from speechperf.views.compare_cells import cells
    from speechperf.views.compare_plots import plot_latency

    _, paths, _ = three_backends
    svg = plot_latency(cells(read(paths["json"])), tmp_path / "p.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    text = svg.read_text()
    assert all(label in text for label in ("torch", "paddle", "onnxruntime"))


@pytest.mark.slow
def test_a_child_killed_with_sigkill_is_reported_and_the_others_are_written(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.Popen(
        compare_cmd(
            *S2T_TINY,
            "--meters",
            "runtime",
            "--backends",
            "torch,onnxruntime",
            "--runs",
            "2",
            "--workdir",
            str(tmp_path / "work"),
            "-o",
            str(out),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = None
    stderr_lines = []
    for line in proc.stderr:
        stderr_lines.append(line)
        if killed is None and "torch run 1: started pid" in line:
            killed = int(line.rsplit("pid", 1)[1])
            time.sleep(0.5)  # the child is importing torch: it runs for seconds more
            os.kill(killed, signal.SIGKILL)
    stdout = proc.stdout.read()
    assert proc.wait(timeout=300) == 1, "".join(stderr_lines)
    assert killed is not None
    assert "run 1 FAILED: killed by SIGKILL (out of memory or killed) (exit code 137" in stdout
    data = json.loads(out.read_text())
    runs = {(r["label"], r["run"]): r for r in data["runs"]}
    dead = runs[("torch", 0)]
    assert (dead["ok"], dead["signal"], dead["exit_code"], dead["pid"]) == (False, "SIGKILL", 137, killed)
    assert all(runs[key]["ok"] for key in [("torch", 1), ("onnxruntime", 0), ("onnxruntime", 1)])
    rows = {s["cell"]: s for s in data["rows"]}
    assert rows["torch"]["runs_ok"] == 1 and rows["torch"]["runs_failed"] == 1
    assert "killed by SIGKILL" in rows["torch"]["failure"] and rows["onnxruntime"]["runs_ok"] == 2
    assert rows["onnxruntime"]["mean_ms"] > 0


def test_a_child_past_the_timeout_is_killed_and_reported(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run(
        compare_cmd(
            *S2T_TINY,
            "--meters",
            "runtime",
            "--backends",
            "torch",
            "--runs",
            "1",
            "--timeout",
            "0.5",
            "--workdir",
            str(tmp_path / "work"),
            "-o",
            str(out),
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "run 1 FAILED: timed out after 0.5 s (exit code 137" in proc.stdout
    run = json.loads(out.read_text())["runs"][0]
    assert run["ok"] is False and run["reason"] == "timed out after 0.5 s" and run["wall_s"] < 10


@pytest.mark.slow
def test_threads_and_sweep_make_one_cell_each_with_the_threads_recorded(tmp_path):
    out = tmp_path / "c.json"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            *S2T_TINY[:2],
            "--dataset-size",
            "1",
            "--repeat",
            "1",
            "--meters",
            "runtime",
            "--backends",
            "onnxruntime",
            "--threads",
            "1,2",
            "--sweep",
            "preset=tiny",
            "--runs",
            "1",
            "--workdir",
            str(tmp_path / "w"),
            "-o",
            str(out),
            "--plot",
            str(tmp_path / "p.png"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [c["label"] for c in data["cells"]] == ["onnxruntime t=1 preset=tiny", "onnxruntime t=2 preset=tiny"]
    children = [json.loads(Path(r["json_path"]).read_text()) for r in data["runs"]]
    assert [c["result"]["threads"] for c in children] == [1, 2]
    # one backend: the thread counts are ranked against each other
    assert len(data["comparisons"]) == 1 and len(data["comparisons"][0]) == 1
    # thread scaling, recomputed from the children's own per-sample runtimes: speed-up over 1 thread, efficiency
    one, two = (statistics.fmean(c["result"]["totals"]["per_sample_s"].values()) for c in children)
    rows = data["rows"]
    assert rows[0]["speedup_vs_1t"] == 1.0 and rows[0]["efficiency"] == 1.0
    assert rows[1]["speedup_vs_1t"] == pytest.approx(one / two, abs=1e-3)
    assert rows[1]["efficiency"] == pytest.approx(one / two / 2, abs=1e-3)
    assert "speed-up" in result.output and "efficiency" in result.output
    assert (tmp_path / "p.scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backends", "torch,tensorflow"], "--backends: unknown backend 'tensorflow'; known backends: "),
        (["--threads", "1,x"], "--threads = 'x'; must be a whole number >= 1"),
        (["--sweep", "colour=red"], "--sweep colour: not a config key; allowed: preset"),
        (["--sweep", "preset=tiny", "--preset", "tiny"], "--preset and --sweep preset=... both given"),
        (["--plot", "p.pdf"], "--plot p.pdf: the file must end in .png or .svg"),
        (["--backends", "torch,torch"], "--backends 'torch,torch': torch is given more than once"),
        (["--sweep", "beam=0"], "beam"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = CliRunner().invoke(main, ["compare", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output


def test_ray_executor_without_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    result = CliRunner().invoke(main, ["compare", "--executor", "ray", "--backends", "onnxruntime"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        'Error: --executor ray needs the ray package, which is not installed: pip install "speechperf[ray]"'
    )


def test_bench_save_outputs_holds_every_stage_output(tmp_path):
    npz, js = tmp_path / "o.npz", tmp_path / "r.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "-b",
            "onnxruntime",
            *S2T_TINY,
            "--meters",
            "runtime",
            "-q",
            "--save-outputs",
            str(npz),
            "-o",
            str(js),
        ],
    )
    assert result.exit_code == 0, result.output
    from speechperf.benchmark.saved_outputs import load_stage_outputs

    saved = load_stage_outputs(npz)
    outputs = json.loads(js.read_text())["result"]["outputs"]
    assert sorted(saved) == [("stage1", "gen0", "tokens"), ("stage1", "gen1", "tokens")]
    for sid in ("gen0", "gen1"):
        assert saved[("stage1", sid, "tokens")].tolist() == outputs[sid]["tokens"]
    assert np.load(npz, allow_pickle=False)  # a plain npz: no pickled object inside
    bad = CliRunner().invoke(main, ["bench", "-b", "onnxruntime", "--save-outputs", str(tmp_path / "o.pkl")])
    assert bad.exit_code == 2 and "--save-outputs" in bad.output and ".npz" in bad.output


@pytest.mark.slow
def test_jobs_above_one_warns_and_still_runs_every_child(tmp_path):
    out = tmp_path / "c.json"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            *S2T_TINY[:4],
            "--dataset-size",
            "1",
            "--repeat",
            "1",
            "--meters",
            "runtime",
            "--backends",
            "onnxruntime",
            "--runs",
            "2",
            "--jobs",
            "2",
            "--workdir",
            str(tmp_path / "w"),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "warning: --jobs 2 runs 2 measured children at once" in result.output
    runs = json.loads(out.read_text())["runs"]
    assert [(r["run"], r["ok"]) for r in runs] == [(0, True), (1, True)]
    assert runs[0]["pid"] != runs[1]["pid"]
