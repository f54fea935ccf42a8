"""``speechperf diff`` on real runs of the tiny S2T, through the CLI: one process per side never fails the gate,
``bench --runs 2`` keeps each process's figures and load, and diff tests over them.

No assertion here depends on a timing: which figures make a regression is tests/test_diff_runs.py's, on fixed
figures.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from speechperf.results import SCHEMA_VERSION
from tests.test_outputs import one_line_error

SPEECHPERF = [sys.executable, "-m", "speechperf"]
BENCH = [
    "-q",
    "bench",
    "-b",
    "onnxruntime",
    "--threads",
    "1",
    "--dataset-size",
    "4",
    "--repeat",
    "2",
    "--meters",
    "runtime,memory",
    "--no-store",
    "--set",
    "general.generated_seconds=[2.0,2.0]",  # one length: the length fit says why it is not made
]
COMPARE = ["-q", "compare", "--backends", "onnxruntime", "--runs", "3", "--dataset-size", "4", "--meters", "runtime"]
GATE = ["--fail-above", "5%"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SPEECHPERF, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("diff")
    paths = {name: folder / f"{name}.json" for name in ("base", "same", "runs2", "compare_base")}
    for name in ("base", "same"):
        assert cli(*BENCH, "-o", str(paths[name])).returncode == 0
    done = cli(*BENCH, "--runs", "2", "-o", str(paths["runs2"]))
    assert done.returncode == 0, done.stderr
    plot = ["--plot", str(folder / "c.png")]
    assert cli(*COMPARE, "-o", str(paths["compare_base"]), *plot, "--no-store").returncode == 0
    return paths


@pytest.mark.slow
def test_two_single_process_benches_are_shown_but_not_tested(runs):
    done = cli("diff", str(runs["base"]), str(runs["same"]), *GATE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stage1 s2t" in done.stdout and "total" in done.stdout and "REGRESSION" not in done.stdout
    assert "no significance test: one process per side" in done.stdout
    row = next(line for line in done.stdout.splitlines() if "│ total" in line)
    cells = [c.strip() for c in row.split("│")]
    assert "(n=1)" in cells[2] and cells[5] == "-"  # no Welch's p
    # the same ratio from the raw timings of the two files
    raw = [json.loads(runs[k].read_text())["result"]["totals"]["per_sample_s"].values() for k in ("base", "same")]
    base, same = (statistics.fmean(v) for v in raw)
    assert float(cells[4]) == pytest.approx(same / base, abs=0.006)


@pytest.mark.slow
def test_bench_runs_2_keeps_each_process_and_diff_tests_over_them(runs):
    data = json.loads(runs["runs2"].read_text())
    assert data["kind"] == "bench" and data["process_runs"] == 2 and data["complete"] is True
    assert [r["run"] for r in data["runs"]] == [0, 1] and all(r["ok"] for r in data["runs"])
    for run in data["runs"]:
        assert {"busy_cores_others", "loadavg_before", "busy"} <= set(run["load"])
        assert set(run["per_sample_s"]) == {"stage1 s2t", "total"} and len(run["per_sample_s"]["total"]) == 4
        assert 0 <= run["wait_share"] < 1  # its thread's own wait for a CPU, what diff reads as contention
    # the rows: over every sample of both runs
    pooled = [v for run in data["runs"] for v in run["per_sample_s"]["total"].values()]
    total = next(r for r in data["rows"] if r["stage"] == "total")
    assert total["mean_ms"] == pytest.approx(statistics.fmean(pooled) * 1e3, abs=1e-3)
    done = cli("diff", str(runs["runs2"]), str(runs["runs2"]), *GATE)
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "│ total" in line)
    assert "(n=2)" in row and "ok" in row and "statistical unit: one process run" in done.stdout
    # against a document of one process: readable, and untested
    mixed = cli("diff", str(runs["base"]), str(runs["runs2"]), *GATE)
    assert mixed.returncode == 0 and "1 run(s) on BASE" in mixed.stdout, mixed.stdout + mixed.stderr


@pytest.mark.slow
def test_runs_of_different_configs_are_refused_naming_what_differs(runs, tmp_path):
    other = tmp_path / "other.json"
    data = json.loads(runs["same"].read_text())
    data["config"]["stage1"]["preset"] = "base"
    data["environment"]["threads"] = 2
    other.write_text(json.dumps(data))
    done = cli("diff", str(runs["base"]), str(other), *GATE)
    assert done.returncode == 2
    assert 'config.stage1.preset: "tiny" / "base"' in done.stderr
    assert "environment.threads: 1 / 2" in done.stderr
    assert "Traceback" not in done.stderr
    allowed = cli("diff", str(runs["base"]), str(other), *GATE, "--allow-different")
    assert allowed.returncode == 0 and "config.stage1.preset" in allowed.stderr


@pytest.mark.slow
def test_a_future_schema_version_is_one_line_exit_2(runs, tmp_path):
    future = tmp_path / "future.json"
    data = json.loads(runs["base"].read_text())
    data["schema_version"] = 99
    future.write_text(json.dumps(data))
    done = cli("diff", str(runs["base"]), str(future))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "schema_version 99" in done.stderr
    assert f"reads 1 to {SCHEMA_VERSION}" in done.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [("not json", "not JSON"), ("[1, 2]", "no JSON object"), ('{"a": 1}', "not a speechperf result document")],
)
def test_foreign_files_are_one_line_exit_2(tmp_path, content, says):
    path = tmp_path / "x.json"
    path.write_text(content)
    done = cli("diff", str(path), str(path))
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_bench_and_compare_json_are_not_mixed(runs):
    done = cli("diff", str(runs["base"]), str(runs["compare_base"]))
    assert done.returncode == 2 and "diff compares two documents of one kind" in done.stderr


@pytest.mark.slow
def test_a_bad_threshold_is_one_line_exit_2(runs):
    done = cli("diff", str(runs["base"]), str(runs["same"]), "--fail-above", "five")
    assert done.returncode == 2 and "--fail-above 'five'" in done.stderr


@pytest.mark.slow
def test_compare_fits_cost_against_length_and_plots_it_beside_the_box_plot(runs):
    import matplotlib.image

    data = json.loads(runs["compare_base"].read_text())
    fit = data["length_fit"]["onnxruntime"]["stage1 s2t"]
    assert fit["points"] == fit["distinct_lengths"] == 4 and fit["ms_per_audio_s"] is not None  # generated 1-4 s
    # whether the line means something depends on the timings (speechperf.length_cost): a fit, or why not
    meaningless = ("no cost per audio-second", "the runtime falls", "the fixed cost is below 0")
    assert fit["exponent_sigma"] is not None if fit["reason"] is None else fit["reason"].startswith(meaningless)
    pixels = matplotlib.image.imread(runs["compare_base"].parent / "c.length.png")
    assert pixels.std() > 0.05  # points, lines and text, not a blank canvas
    # one length only in the bench runs: no fit, and the table's note says why
    bench = json.loads(runs["base"].read_text())["length_fit"]["stage1 s2t"]
    assert bench["reason"] == "1 distinct audio length(s), a fit needs at least 3"


# Documents made here (every kind diff gates, each figure known), and the version 1 files of tests/data/v1: fast.

V1 = sorted((Path(__file__).parent / "data" / "v1").glob("*.json"))


def run_diff(base: Path, new: Path, *args: str):
    from click.testing import CliRunner

    from speechperf.cli import main

    return CliRunner().invoke(main, ["diff", str(base), str(new), *args])


@pytest.mark.parametrize("path", V1, ids=[p.stem for p in V1])
def test_every_version_1_file_reads_as_its_kind_and_passes_the_gate_against_itself(path):
    from speechperf.results import KINDS, read
    from speechperf.results.figures import BY_NAME

    raw = json.loads(path.read_text())
    doc = read(path)
    kind = path.stem if path.stem in KINDS else path.stem.split("-")[0]  # loadgen-peak.json: a loadgen file
    assert doc.schema_version == 4 and doc.kind == kind
    assert doc.rows, "a version 1 file's table is read into rows"
    assert not {"runtime_mean_ms", "latency_ms", "rtfx"} & {k for row in doc.rows for k in row}, doc.rows[0]
    assert doc.complete is bool(raw.get("complete"))
    done = run_diff(path, path, "--fail-above", "5%")
    assert done.exit_code == 0, done.output
    assert "REGRESSION" not in done.output and "statistical unit:" in done.output
    assert all(k in BY_NAME for row in doc.rows for k, v in row.items() if k.endswith("_ms") and v is not None)


def _run(scenario: str, p90: float, p99: float, per_s: float, target: float | None = None, result="VALID") -> dict:
    """One LoadGen test as a loadgen document keeps it (``runs``)."""
    return {
        "scenario": scenario,
        "mode": "performance",
        "backend": "onnxruntime",
        "instances": 1,
        "threads": 1,
        "target_qps": target,
        "rtfx": 10.0,
        "samples": 100,
        "compliance": [],
        "summary": {
            "result": result,
            "headline": "-",
            "percentiles_ms": {"p50": p90 / 2, "p90": p90, "p99": p99},
            "samples_per_s": per_s,
            "scheduled_qps": target,
            "completed_qps": per_s,
            "unmet": [],
        },
    }


def loadgen_doc(path: Path, runs: list[dict], peak: dict | None = None, **env) -> Path:
    from speechperf.results import Document
    from speechperf.results.loadgen_table import rows

    body = {"runs": runs, **({"peak": peak} if peak else {})}
    doc = Document(kind="loadgen", rows=rows(runs, peak), body=body, complete=True, environment=env)
    doc.write(path)
    return path


def test_loadgen_documents_gate_each_scenario_on_its_own_figure(tmp_path):
    base = loadgen_doc(tmp_path / "a.json", [_run("SingleStream", 20.0, 30.0, 50.0)])
    same = loadgen_doc(tmp_path / "b.json", [_run("SingleStream", 20.8, 45.0, 49.0)])  # p90 +4%: under 5%
    slow = loadgen_doc(tmp_path / "c.json", [_run("SingleStream", 22.0, 30.0, 50.0)])  # p90 +10%
    ok = run_diff(base, same, "--fail-above", "5%")
    assert ok.exit_code == 0, ok.output
    line = next(ln for ln in ok.output.splitlines() if "p90_ms" in ln)
    assert "20.000" in line and "20.800" in line and "1.040" in line and "ok" in line and "lower" in line
    assert "one LoadGen run (one process) on each side" in ok.output and "headline (p90)" in ok.output
    bad = run_diff(base, slow, "--fail-above", "5%")
    assert bad.exit_code == 1, bad.output
    assert "REGRESSION" in next(ln for ln in bad.output.splitlines() if "p90_ms" in ln)
    # the p99 got 50% worse in ``same``: the gate watches it when told to
    assert run_diff(base, same, "--fail-above", "5%", "--fail-metric", "p99").exit_code == 1
    # samples/s: higher is better, 2% lower passes a 5% gate and fails a 1% one
    assert run_diff(base, same, "--fail-above", "5%", "--fail-metric", "samples_per_s").exit_code == 0
    assert run_diff(base, same, "--fail-above", "1%", "--fail-metric", "samples_per_s").exit_code == 1


def test_a_server_peak_gates_on_peak_qps_where_higher_is_better(tmp_path):
    def peak(path, rate):
        trials = [_run("Server", 50.0, 90.0, rate, target=rate), _run("Server", 900.0, 2500.0, 2 * rate, 2 * rate)]
        trials[1]["summary"]["result"] = "INVALID"
        return loadgen_doc(path, trials, {"peak_qps": rate, "trials": 2, "seconds": 9.0, "budget_s": 10.0})

    base, lower, higher = peak(tmp_path / "a.json", 10.0), peak(tmp_path / "b.json", 8.0), peak(tmp_path / "c.json", 20)
    down = run_diff(base, lower, "--fail-above", "5%")
    assert down.exit_code == 1, down.output
    line = next(ln for ln in down.output.splitlines() if "peak_qps" in ln)
    assert "Server peak" in line and "0.800" in line and "higher" in line and "REGRESSION" in line
    assert "trial" not in down.output  # the trials' rates differ between runs: only the peak is compared
    assert run_diff(base, higher, "--fail-above", "5%").exit_code == 0


def test_documents_of_two_kinds_or_of_a_kind_without_figures_are_one_line_exit_2(tmp_path):
    from speechperf.results import Document

    loadgen = loadgen_doc(tmp_path / "a.json", [_run("Offline", 1.0, 2.0, 3.0)])
    other = tmp_path / "h.json"
    Document(kind="history", rows=[{"id": 1}]).write(other)
    one_line_error(run_diff(loadgen, other), "a history document has no figure to gate", "loadgen")
    one_line_error(run_diff(other, other), "h.json")
    serving = tmp_path / "s.json"
    Document(kind="serving", rows=[{"cell": "onnxruntime", "samples_per_s": 3.0}]).write(serving)
    one_line_error(run_diff(loadgen, serving), "BASE is a loadgen document and NEW a serving document")


def test_serving_rows_of_both_versions_are_gated_on_the_scenario_figure(tmp_path):
    from speechperf.results import Document

    def serving(path: Path, value: float) -> Path:  # version 1's row form: the figure in metric/value
        row = {"cell": "onnxruntime", "scenario": "Offline", "metric": "samples_per_s", "value": value}
        row.update(result="VALID", latency_ms=40.0, percentile=99.0)
        Document(kind="serving", rows=[row], body={"scenario": "Offline"}).write(path)
        return path

    base, down = serving(tmp_path / "a.json", 100.0), serving(tmp_path / "b.json", 90.0)
    done = run_diff(base, down, "--fail-above", "5%")
    assert done.exit_code == 1 and "REGRESSION" in done.output, done.output
    assert run_diff(base, down, "--fail-above", "5%", "--fail-metric", "p99").exit_code == 0  # same latency


def test_optimize_variants_are_gated_per_variant_over_their_runs(tmp_path):
    from speechperf.results import Document

    def optimize(path: Path, ms: list[float]) -> Path:
        runs = [{"variant": "fp32", "run": i, "returncode": 0, "mean_ms": m} for i, m in enumerate(ms)]
        rows = [{"variant": "fp32", "mean_ms": sum(ms) / len(ms), "peak_rss_mib": 100.0, "wer": 0.1}]
        Document(kind="optimize", rows=rows, body={"backend": "onnxruntime", "runs": runs}).write(path)
        return path

    fast, slow = optimize(tmp_path / "o1.json", [10.0, 10.1, 9.9]), optimize(tmp_path / "o2.json", [20.0, 20.2, 19.8])
    done = run_diff(fast, slow, "--fail-above", "5%")
    assert done.exit_code == 1, done.output
    row = next(ln for ln in done.output.splitlines() if "fp32" in ln)
    assert "(n=3)" in row and "REGRESSION" in row and "statistical unit: one process run" in done.output
    assert run_diff(fast, slow, "--fail-above", "5%", "--fail-metric", "wer").exit_code == 0
