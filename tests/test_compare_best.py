"""``speechperf compare --best``: the search's rules as a unit of the core (fake children: a variant that fails
parity is dropped with the reason, the fastest passing one wins, the budget stops the search), the thread-scaling
figures on fake timings, and one real ``compare --best`` through the CLI on the tiny S2T with a small budget, which
``speechperf show`` gives again from its JSON and its stored id (the show test of compare-best documents: one search
serves both)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from speechperf import views
from speechperf.backend import Variant
from speechperf.compare import best
from speechperf.compare.parity import CellParity
from speechperf.compare.scaling import oversubscription_warning, scaling
from speechperf.compare.summary import summarize
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.meters.parity import OutputDiff
from speechperf.results import Document
from tests.show_again import assert_shown_from_json_and_store, export_args, stored_id

REPO = Path(__file__).resolve().parents[1]


def _candidate(backend: str, name: str) -> best.Candidate:
    return best.Candidate(backend, Variant(name, "fmt"), Cell(f"{backend}:{name}", backend))


def _fake_children(tmp_path: Path, seconds: dict[str, float], calls: list[str]):
    """A run_cells that writes a finished child's JSON with the given mean per-sample runtime, and records the
    order it was called in."""

    def run_cells(cells, runs, workdir, **_):
        (cell,) = cells
        calls.append(cell.label)
        out = []
        passes = int(Path(workdir).name.removeprefix("pass")) - 1  # the search runs each pass in a folder of its own
        for run in range(runs):
            path = tmp_path / f"{cell.slug}-{passes}-{run}.json"
            t = seconds[cell.label] * (1 + 0.01 * (run + passes))
            data = {
                "kind": "bench",  # a child's result document (speechperf.results), as little of it as is read
                "schema_version": 2,
                "result": {
                    "threads": 1,
                    "totals": {"per_sample_s": {"a": t, "b": t}},
                    "stages": [{"index": 1, "label": "s", "load_s": 0.5, "first_call_s": 2.0 + run + passes}],
                },
                "environment": {"threads": 1},
            }
            path.write_text(json.dumps(data))
            out.append(RunResult(cell.label, run, True, 0, None, None, str(path), "", ""))
        return out

    return run_cells


def test_search_drops_the_variant_failing_parity_and_picks_each_backends_fastest(tmp_path, monkeypatch):
    found = [_candidate("a", "slow"), _candidate("b", "x"), _candidate("a", "lossy"), _candidate("a", "fast")]
    seconds = {"a:slow": 0.3, "b:x": 0.2, "a:lossy": 0.05, "a:fast": 0.1}
    calls: list[str] = []
    monkeypatch.setattr(best, "run_cells", _fake_children(tmp_path, seconds, calls))
    lossy = OutputDiff("stage1", "tokens", True, 2, 1, None)

    def parity(labels, results, tolerances=None):
        assert labels == list(seconds)  # every tried variant, in the order tried: the first is the reference
        diffs = {"a:lossy": (lossy,)}
        return {label: CellParity(label, labels[0], diffs.get(label, ())) for label in labels}

    monkeypatch.setattr(best, "group_parity", parity)
    searched = best.search(found, runs=2, budget_s=100, workdir=tmp_path)
    assert calls == [c.cell.label for c in found for _ in range(2)]  # two runs each, one child at a time
    assert {b: c.variant.name for b, c in searched.winners.items()} == {"a": "fast", "b": "x"}
    rows = {f"{r.backend}:{r.variant}": r for r in searched.rows}
    # the fastest of all is dropped: its tokens differ from the reference's
    assert rows["a:lossy"].status == "dropped: outputs fail parity with a:slow"
    assert "DIFFER in 1/2 samples" in rows["a:lossy"].parity
    assert rows["a:slow"].status == "slower" and rows["a:fast"].status == "winner"
    # time over the runs (0.1 and 0.101), cold start the median of load + first call (2.5 and 3.5)
    assert rows["a:fast"].mean_s == pytest.approx(0.1005) and rows["a:fast"].stdev_s == pytest.approx(0.000707, 1e-2)
    assert rows["a:fast"].cold_start_s == pytest.approx(3.0)
    record = searched.to_json()
    assert record["winners"] == {"a": "fast", "b": "x"} and len(record["search"]) == 4
    shown = views.view_of("compare-best").markdown(Document(kind="compare-best", body={"best": record}))
    assert "| a | lossy |" in shown  # the search's table under the (empty) rows


def test_search_stops_at_the_budget_and_says_what_was_not_tried(tmp_path, monkeypatch):
    found = [_candidate("a", "one"), _candidate("a", "two")]
    calls: list[str] = []
    fake = _fake_children(tmp_path, {"a:one": 0.1, "a:two": 0.05}, calls)
    # start, before the first variant, before its run, before the second variant (past the budget), the end
    clock = iter([0.0, 0.0, 0.0, 50.0, 50.0])
    monkeypatch.setattr(best.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(best, "run_cells", fake)
    searched = best.search(found, runs=1, budget_s=10, workdir=tmp_path)
    assert calls == ["a:one"]
    assert [r.status for r in searched.rows] == ["winner", "not tried: budget spent"]


def test_a_variants_second_run_is_not_started_once_the_budget_is_spent(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(best, "run_cells", _fake_children(tmp_path, {"a:one": 0.1}, calls))
    clock = iter([0.0, 0.0, 0.0, 50.0, 50.0])  # start, the variant, its first run, its second run (spent), the end
    monkeypatch.setattr(best.time, "monotonic", lambda: next(clock))
    searched = best.search([_candidate("a", "one")], runs=2, budget_s=10, workdir=tmp_path)
    assert calls == ["a:one"]
    assert searched.rows[0].status == "winner" and searched.rows[0].stdev_s is None  # one run: no σ


def test_a_child_killed_at_the_budget_says_the_budget_stopped_it():
    timed_out = RunResult("a:x", 0, False, 137, "SIGKILL", "timed out after 3.2 s", "", "", "")
    assert best._budget_cut(timed_out, 30).reason == "stopped: it ran past the --best-budget of 30 s"
    crashed = attrs.evolve(timed_out, reason="exit code 1")
    assert best._budget_cut(crashed, 30) is crashed


def test_scaling_is_the_speedup_over_one_thread_and_its_efficiency(tmp_path):
    cells = [Cell(f"{b} t={n}", b, n) for b in ("x", "y") for n in (1, 2, 4)]
    means = {"x t=1": 0.4, "x t=2": 0.25, "x t=4": 0.2, "y t=1": 0.3, "y t=2": 0.3, "y t=4": 0.1}
    results = []
    for cell in cells:
        path = tmp_path / f"{cell.slug}.json"
        t = means[cell.label]
        data = {
            "kind": "bench",
            "schema_version": 2,
            "result": {"threads": cell.threads, "totals": {"per_sample_s": {"a": t}}, "stages": []},
        }
        path.write_text(json.dumps({**data, "environment": {"threads": cell.threads}}))
        results.append(RunResult(cell.label, 0, True, 0, None, None, str(path), "", ""))
    got = scaling(summarize(cells, results))
    assert got["x t=1"].speedup == 1.0 and got["x t=1"].efficiency == 1.0
    assert got["x t=2"].speedup == pytest.approx(1.6) and got["x t=2"].efficiency == pytest.approx(0.8)
    assert got["x t=4"].speedup == pytest.approx(2.0) and got["x t=4"].efficiency == pytest.approx(0.5)
    assert got["y t=4"].speedup == pytest.approx(3.0) and got["y t=4"].efficiency == pytest.approx(0.75)
    # one thread count only: no scaling columns at all
    assert scaling(summarize(cells[:1], results[:1])) == {}


def test_oversubscription_warns_only_past_the_free_cores():
    assert oversubscription_warning([1, 2], free=2.0, cpu_count=2) is None
    line = oversubscription_warning([1, 4], free=1.3, cpu_count=2)
    assert line is not None and "up to 4 thread(s), but only 1.3 of 2 cores are free" in line


def test_best_with_a_sweep_is_one_line_and_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "speechperf", "compare", "--best", "--sweep", "preset=tiny,base"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("--best takes no --sweep: it searches each backend's variants itself")
    )


@pytest.mark.slow
def test_compare_best_end_to_end_on_the_tiny_s2t_and_show_gives_it_again(tmp_path):
    out, md, store = tmp_path / "best.json", tmp_path / "best.md", tmp_path / "store.sqlite"
    args = ["--config", str(REPO / "configs" / "S2T.yaml"), "--preset", "tiny", "--dataset-size", "1"]
    args += ["--repeat", "1", "--warmup", "1", "--meters", "runtime", "--backends", "onnxruntime,torch"]
    # torch.compile's variants run until the budget kills them, so the search always takes the whole budget: 30 s
    # holds the round-robin's first round, each backend's default (about 10 s a child seen with two cores at a load of
    # 9), and more on a quiet machine; what was tried is ranked and checked the same way whatever the budget.
    args += ["--runs", "1", "--best-runs", "1", "--best", "--best-budget", "30", "--workdir", str(tmp_path / "w")]
    args += ["--store", str(store), *export_args(tmp_path / "best")]  # -o best.json --markdown best.md --csv ...
    proc = subprocess.run(
        [sys.executable, "-m", "speechperf", "compare", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    search = data["best"]["search"]
    declared = {b: [v.name for v in best.backend_variants(b)] for b in ("onnxruntime", "torch")}
    assert sorted((r["backend"], r["variant"]) for r in search) == sorted(
        (b, v) for b, names in declared.items() for v in names
    )
    # round-robin: each backend's first (default) variant is tried first and so always measured
    assert [(r["backend"], r["variant"]) for r in search[:2]] == [("onnxruntime", "all"), ("torch", "eager")]
    assert all(r["status"] != "not tried: budget spent" for r in search[:2])
    winners = data["best"]["winners"]
    assert set(winners) == {"onnxruntime", "torch"}
    for backend, variant in winners.items():
        tried = [r for r in search if r["backend"] == backend and r["mean_ms"] is not None]
        fastest = min((r for r in tried if not r["status"].startswith("dropped")), key=lambda r: r["mean_ms"])
        assert fastest["variant"] == variant and fastest["status"] == "winner"
        assert fastest["cold_start_s"] > 0
    # the comparison of the winners names each backend's winning variant
    assert [c["label"] for c in data["cells"]] == [f"{b} ({v})" for b, v in winners.items()]
    assert all(f"{b} ({v})" in proc.stdout for b, v in winners.items())
    assert "compare --best: the search" in proc.stdout and "compare --best: trying" in proc.stderr
    assert "## compare --best: the search" in md.read_text()
    assert data["kind"] == "compare-best" and data["rows"][0]["runs_ok"] == 1 and data["comparisons"][0]
    # the search's table comes first, then the winners' comparison; show prints and writes the same again
    assert proc.stdout.index("compare --best: the search") < proc.stdout.index("Cell: ")
    assert_shown_from_json_and_store(proc.stdout, tmp_path / "best", store, stored_id(proc))
