"""The results store (speechperf.store, docs/history.md) on real runs of the tiny S2T on onnxruntime: what a run
stores (its JSON, per-stage metric rows, the machine, the package versions, the git commit of the folder it ran
in), concurrent writers in real processes, corrupt, foreign and newer files refused with one line and left as
they were, and ``speechperf history``'s listing, filters and plots."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.results import SCHEMA_VERSION, loads, read
from speechperf.store import db
from tests.test_outputs import one_line_error

FAST = ["-b", "onnxruntime", "--dataset-size", "3", "--warmup", "1", "--repeat", "1", "--quiet"]


def bench(*args: str):
    return CliRunner().invoke(main, ["bench", *FAST, *args])


def rows(store: Path, sql: str, *params):
    with closing(sqlite3.connect(store)) as con:
        return con.execute(sql, params).fetchall()


@pytest.fixture
def git_folder(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A git work tree with one commit, as the folder the command runs in."""
    folder = tmp_path / "project"
    folder.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(folder), *a], check=True, capture_output=True, text=True)  # noqa: E731
    run("init", "-q")
    (folder / "model.txt").write_text("v1\n")
    run("add", "model.txt")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    monkeypatch.chdir(folder)
    return folder, run("rev-parse", "HEAD").stdout.strip()


@pytest.mark.slow
def test_a_bench_run_is_stored_with_its_json_metrics_environment_and_commit(tmp_path, git_folder):
    folder, commit = git_folder
    store, out = tmp_path / "runs.sqlite", tmp_path / "r.json"
    result = bench("--store", str(store), "-o", str(out))
    assert result.exit_code == 0, result.output
    (run,) = rows(
        store,
        "SELECT command, backends, model, git_commit, git_dirty, cwd, hostname, cores, packages, "
        "result_schema_version, result, complete, exit_code FROM runs",
    )
    assert run[:6] == ("bench", "onnxruntime", "S2T", commit, 0, str(folder))
    assert run[6] == os.uname().nodename and run[7] == os.cpu_count()
    packages = json.loads(run[8])
    assert packages["onnxruntime"] and packages["speechperf"]  # read from the installed metadata
    assert run[9] == SCHEMA_VERSION and run[11:] == (1, 0)  # stored as the current schema version
    stored = loads(run[10])
    assert stored.kind == "bench" and stored.rows == read(out).rows  # the same document -o wrote
    metrics = dict(rows(store, "SELECT stage, value FROM metrics WHERE metric = 'mean_ms' AND backend = 'onnxruntime'"))
    expected = {r["stage"]: r["mean_ms"] for r in stored.rows}
    assert set(metrics) == {"stage1 s2t", "total"} and metrics == pytest.approx(expected)

    (folder / "model.txt").write_text("v2\n")  # a tracked file changed: the run is marked dirty
    assert bench("--store", str(store)).exit_code == 0
    assert rows(store, "SELECT git_commit, git_dirty FROM runs WHERE id = 2") == [(commit, 1)]


@pytest.mark.slow
def test_outside_git_no_commit_is_stored_and_no_store_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # /tmp is in no git work tree
    store = tmp_path / "s.sqlite"
    assert bench("--store", str(store)).exit_code == 0
    assert rows(store, "SELECT git_commit, git_dirty FROM runs") == [(None, None)]
    other = tmp_path / "none.sqlite"
    assert bench("--store", str(other), "--no-store").exit_code == 0
    assert not other.exists()


def _append_many(path: str, writer: int, count: int) -> None:
    for i in range(count):
        doc = {"schema_version": 1, "complete": True, "environment": {"backend": f"b{writer}"}, "summary": []}
        metrics = [(f"b{writer}", None, "total", "runtime_mean_ms", float(i))]
        db.append(
            Path(path),
            {"time": f"t{i}", "command": "bench", "backends": f"b{writer}", "complete": 1, "result": json.dumps(doc)},
            metrics,
        )


@pytest.mark.slow
def test_concurrent_writers_in_real_processes_lose_no_row(tmp_path):
    store = tmp_path / "busy.sqlite"
    writers, each = 6, 25
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: nothing shared but the file
    procs = [ctx.Process(target=_append_many, args=(str(store), w, each)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * writers
    assert rows(store, "SELECT count(*), count(DISTINCT id) FROM runs") == [(writers * each, writers * each)]
    assert rows(store, "SELECT backend, count(*) FROM metrics GROUP BY backend") == [
        (f"b{w}", each) for w in range(writers)
    ]
    assert rows(store, "PRAGMA journal_mode") == [("wal",)]


@pytest.mark.slow
def test_benches_writing_at_once_are_all_stored(tmp_path):
    store = tmp_path / "three.sqlite"
    command = [sys.executable, "-m", "speechperf", "bench", *FAST, "--store", str(store)]
    procs = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    errors = [p.communicate(timeout=240)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    assert rows(store, "SELECT count(*) FROM runs WHERE command = 'bench'") == [(3,)]
    assert rows(store, "SELECT count(DISTINCT run_id) FROM metrics WHERE metric = 'mean_ms'") == [(3,)]


def _foreign(path: Path) -> None:
    with closing(sqlite3.connect(path)) as con, con:
        con.execute("CREATE TABLE songs (title TEXT)")
        con.execute("INSERT INTO songs VALUES ('x')")


def _newer(path: Path) -> None:
    _append_many(str(path), 0, 1)
    with closing(sqlite3.connect(path)) as con, con:
        con.execute("UPDATE speechperf_schema SET version = ?", (db.SCHEMA_VERSION + 1,))


@pytest.mark.parametrize(
    "kind, words",
    [
        ("random", "not an SQLite database"),
        ("damaged", "cannot be read"),
        ("foreign", "not a speechperf results store (its tables: songs)"),
        ("newer", f"store schema version {db.SCHEMA_VERSION + 1} is newer"),
    ],
)
def test_a_corrupt_foreign_or_newer_store_is_one_line_and_left_untouched(kind, words, tmp_path):
    store = tmp_path / "results.sqlite"
    if kind == "random":
        store.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "damaged":  # SQLite's header, then garbage where its pages should be
        _append_many(str(store), 0, 3)
        data = bytearray(store.read_bytes())
        data[100:] = np.random.default_rng(1).bytes(len(data) - 100)
        store.write_bytes(bytes(data))
    elif kind == "foreign":
        _foreign(store)
    else:
        _newer(store)
    before = store.read_bytes()
    for args in (["bench", *FAST, "--store", str(store)], ["history", "--store", str(store)]):
        line = one_line_error(CliRunner().invoke(main, args), str(store.name), words)
        assert store.read_bytes() == before, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]  # no -wal or -shm beside it


def test_a_store_that_fails_after_the_run_keeps_the_exports(tmp_path, monkeypatch):
    """The store is written after -o: a file damaged while the run measured costs none of the measurements."""
    from speechperf.store.keep import Keep

    store, out = tmp_path / "s.sqlite", tmp_path / "r.json"
    _foreign(store)
    before = store.read_bytes()
    monkeypatch.setattr(Keep, "check", lambda self: self)  # as if the file went bad after the first check
    one_line_error(bench("--store", str(store), "-o", str(out)), "not a speechperf results store")
    assert json.loads(out.read_text())["complete"] is True
    assert store.read_bytes() == before


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """A store with two bench runs at two commits and one compare run."""
    folder = tmp_path_factory.mktemp("hist")
    store = folder / "h.sqlite"
    repo = folder / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    base = [sys.executable, "-m", "speechperf"]
    for n in range(2):
        (repo / "f").write_text(str(n))
        git("add", "f")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", str(n))
        subprocess.run([*base, "bench", *FAST, "--store", str(store)], cwd=repo, check=True, capture_output=True)
    compare = ["compare", "--backends", "onnxruntime", "--runs", "1", "--dataset-size", "3", "--repeat", "1"]
    subprocess.run([*base, *compare, "--store", str(store)], cwd=repo, check=True, capture_output=True)
    return store


def history(store: Path, *args: str):
    return CliRunner().invoke(main, ["history", "--store", str(store), *args])


@pytest.mark.slow
def test_history_lists_and_filters_the_stored_runs(filled):
    listing = history(filled)
    assert listing.exit_code == 0, listing.output
    assert "3 run(s)" in listing.output and "compare" in listing.output and "(mean_ms)" in listing.output
    commits = [c for (c,) in rows(filled, "SELECT git_commit FROM runs ORDER BY id")]
    assert len(set(commits)) == 2 and commits[1] == commits[2]  # compare ran at the second commit
    assert "2 run(s)" in history(filled, "--commit", commits[1][:8]).output
    assert "1 run(s)" in history(filled, "--limit", "1").output
    assert "3 run(s)" in history(filled, "--backend", "onnxruntime", "--model", "S2T").output
    assert "0 run(s)" in history(filled, "--since", "2999-01-01").output
    one_line_error(history(filled, "--backend", "tensorflow"), "--backend 'tensorflow'", "holds: onnxruntime")
    one_line_error(history(filled, "--since", "yesterday"), "--since 'yesterday'", "2026-01-31")
    one_line_error(history(filled, "--plot", "speed", "-o", "x.png"), "--plot 'speed'", "mean_ms")
    one_line_error(history(filled, "--plot", "mean_ms", "--stage", "stage9", "-o", "x.png"), "--stage", "total")


@pytest.mark.parametrize("x", ["time", "commit"])
@pytest.mark.slow
def test_history_plots_a_metric_per_backend_and_stage(filled, tmp_path, x):
    import matplotlib.image

    png = tmp_path / f"{x}.png"
    result = history(filled, "--plot", "mean_ms", "--x", x, "-o", str(png))
    assert result.exit_code == 0, result.output
    assert "1 line(s)" in result.output  # onnxruntime's total: its one stage's line would repeat it
    pixels = matplotlib.image.imread(png)
    assert pixels.shape[0] > 200 and pixels.std() > 0.05
    both = tmp_path / f"runtime-{x}.png"  # bench's and compare's mean_ms on one plot
    result = history(filled, "--plot", "runtime", "--stage", "total", "--x", x, "-o", str(both))
    assert result.exit_code == 0 and "1 line(s)" in result.output, result.output
    # compare's own per-stage figure is stored too (its table has one row per cell)
    compare = "SELECT id FROM runs WHERE command = 'compare'"
    staged = rows(
        filled, f"SELECT stage FROM metrics WHERE metric = 'mean_ms' AND run_id IN ({compare}) ORDER BY stage"
    )
    assert staged == [("stage1 s2t",), ("total",)]


@pytest.mark.slow
def test_history_never_joins_runs_of_different_configs_into_one_line(filled, tmp_path):
    import json as _json

    from speechperf.store import db

    doc = _json.loads(rows(filled, "SELECT result FROM runs WHERE command = 'bench' LIMIT 1")[0][0])
    metric = [("onnxruntime", None, "total", "runtime_mean_ms", 99.0)]
    record = {"time": "2099-01-01T00:00:00+00:00", "command": "bench", "config_hash": "ffffff00", "model": "MT"}
    db.append(filled, {**record, "backends": "onnxruntime", "complete": 1, "result": _json.dumps(doc)}, metric)
    result = history(filled, "--plot", "runtime", "--stage", "total", "-o", str(tmp_path / "p.png"))
    assert result.exit_code == 0 and "2 line(s)" in result.output, result.output  # S2T's line and MT's line


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--backend", ""], "--backend"),
        (["--commit", " "], "--commit"),
        (["--limit", str(10**20)], "--limit"),
    ],
)
@pytest.mark.slow
def test_history_refuses_an_empty_filter_and_a_limit_past_any_store(filled, args, needle):
    result = history(filled, *args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and needle in errors[0] and "store" not in errors[0].split(needle)[0], result.output


def _loadgen_document(samples_per_s: float, p99: float):
    from speechperf.results import Document

    row = {"scenario": "Offline", "mode": "performance", "trial": None, "backend": "onnxruntime"}
    row.update(result="VALID", samples_per_s=samples_per_s, p90_ms=p99 / 2, p99_ms=p99)
    trial = {**row, "scenario": "Server", "trial": 1, "samples_per_s": 1.0}  # a peak search's trial: not a metric
    config = {"general": {"model_type": "S2T", "backend": "onnxruntime"}}
    env = {"cpu": "x", "cpu_count": 2, "python": "3.11", "backend": "onnxruntime"}
    return Document(kind="loadgen", rows=[row, trial], config=config, environment=env, complete=True)


def test_a_loadgen_document_is_stored_by_its_kind_listed_and_plotted(tmp_path, monkeypatch):
    from speechperf.exports import Exports
    from speechperf.store import history as stored_history
    from speechperf.store.keep import Keep

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.sqlite"
    for per_s, p99 in ((40.0, 30.0), (42.5, 28.0)):
        Exports(keep=Keep(store)).check().finish(_loadgen_document(per_s, p99), 0)
    assert (
        rows(store, "SELECT command, backends, model, result_schema_version, exit_code FROM runs")
        == [("loadgen", "onnxruntime", "S2T", SCHEMA_VERSION, 0)] * 2
    )
    stored = rows(store, "SELECT cell, metric, value FROM metrics WHERE run_id = 2 AND metric LIKE 'p99%'")
    assert stored == [("Offline", "p99_ms", 28.0)]  # the trial row is in the document only
    listing = history(store)
    assert listing.exit_code == 0, listing.output
    assert "Offline 42.500 (samples_per_s)" in listing.output and "loadgen" in listing.output
    lines = stored_history.series(store, "p99_ms", stored_history.Filters(), None)  # what --plot p99_ms draws
    assert {name: [p.value for p in points] for name, points in lines.items()} == {"onnxruntime Offline": [30.0, 28.0]}


def test_version_1_runs_already_in_a_store_read_under_the_current_names(tmp_path):
    """A store written before the envelope keeps bench's ``runtime_mean_ms`` and its WER in percent: history shows
    and plots them as ``mean_ms`` and a fraction, beside a version 2 run."""
    from speechperf.store import history as stored_history
    from speechperf.store.record import metric_rows, record

    store = tmp_path / "s.sqlite"
    old = {"time": "2020-01-01T00:00:00+00:00", "command": "bench", "backends": "onnxruntime", "complete": 1}
    old.update(result_schema_version=1, result=json.dumps({"schema_version": 1, "summary": []}))
    metrics = [("onnxruntime", None, "total", "runtime_mean_ms", 12.5), ("onnxruntime", None, "total", "wer", 25.0)]
    db.append(store, old, metrics)
    doc = loads(json.dumps({"schema_version": 1, "complete": True, "result": {}, "summary": []}))
    doc.rows = [{"stage": "total", "mean_ms": 10.0, "wer": 0.2}]
    doc.environment = {"backend": "onnxruntime"}
    db.append(store, record(doc, 0, cwd=tmp_path), metric_rows(doc))  # tmp_path: in no git work tree
    listing = {r["id"]: r["headline"] for r in stored_history.runs(store, stored_history.Filters())}
    assert listing == {1: "onnxruntime 12.500 (mean_ms)", 2: "onnxruntime 10.000 (mean_ms)"}
    filters = stored_history.Filters()
    assert stored_history.series(store, "mean_ms", filters, None) == {
        "onnxruntime": [
            ("2020-01-01T00:00:00+00:00", "no commit", 12.5, None),
            (stored_time(store, 2), "no commit", 10.0, None),
        ]
    }
    wer = stored_history.series(store, "wer", filters, None)["onnxruntime"]
    assert [p.value for p in wer] == [0.25, 0.2]


def stored_time(store: Path, run_id: int) -> str:
    return rows(store, "SELECT time FROM runs WHERE id = ?", run_id)[0][0]
