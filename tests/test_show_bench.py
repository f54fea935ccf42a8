"""``speechperf show`` on bench's documents: a real ``speechperf bench`` (onnxruntime, the built-in tiny S2T) with
every export, then ``show`` on its JSON and on its id in the store prints the same stdout and writes the same
Markdown, CSV and JSON, with ``--wide`` too; the HTML page has the same table and plots; a document of ``bench --runs
2`` shows its runs again; older schema versions (tests/data/v1, v2) are shown with their rows.

No assertion depends on a timing: each compares what the run printed or wrote with what ``show`` gives from the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speechperf import stats
from speechperf.results import read
from speechperf.views import bench as view
from tests.show_again import assert_shown_again, export_args, file, invoke, speechperf, stored_id

#: The cheapest run that still has every meter of the default: 4 generated clips of two lengths, 2 repeats.
BENCH = ["bench", "-b", "onnxruntime", "--threads", "1", "--dataset-size", "4", "--repeat", "2", "--quiet"]
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    """A plain run and a --wide one, each with every export, kept in one store: their files' stem, stdout and store
    id."""
    folder = tmp_path_factory.mktemp("show-bench")
    store = folder / "results.sqlite"
    made = {}
    for name, more in (("plain", []), ("wide", ["--wide"])):
        stem = folder / name
        done = speechperf(*BENCH, *more, *export_args(stem), "--store", store, "--html", file(stem, "html"))
        made[name] = {"stem": stem, "stdout": done.stdout, "id": stored_id(done), "more": more, "store": store}
    return made


@pytest.mark.slow
@pytest.mark.parametrize("name", ["plain", "wide"])
@pytest.mark.parametrize("by", ["file", "id"])
def test_show_gives_what_the_run_printed_and_wrote(runs, name, by, tmp_path):
    run = runs[name]
    source = file(run["stem"], "json") if by == "file" else run["id"]
    (again,) = assert_shown_again(
        run["stdout"], run["stem"], [source], *run["more"], "--store", run["store"], into=tmp_path
    )
    assert json.loads(file(again, "json").read_text()) == json.loads(file(run["stem"], "json").read_text())
    # what was compared is the run's table, not an empty one
    stdout, doc = run["stdout"], read(file(run["stem"], "json"))
    assert doc.complete and [r["stage"] for r in doc.rows] == ["stage1 s2t", "total"]
    total = stats.mean_sigma(doc.rows[-1]["mean_ms"], doc.rows[-1]["stdev_ms"])
    assert total in stdout and "speechperf bench: S2T on onnxruntime/cpu, 1 thread(s)" in stdout
    assert ("footprint" in stdout) == (name == "wide")


@pytest.mark.slow
def test_the_page_again_has_the_runs_table_and_plots(runs, tmp_path):
    pytest.importorskip("matplotlib")
    run = runs["plain"]
    page = tmp_path / "again.html"
    speechperf("show", file(run["stem"], "json"), "--html", page)
    table = view.html_tables(read(file(run["stem"], "json")))[0]
    first, again = file(run["stem"], "html").read_text(), page.read_text()
    assert table in first and table in again and "<th>mean_ms</th>" in table
    assert first.count("<img") == again.count("<img") == 2


@pytest.mark.slow
def test_show_gives_the_runs_of_bench_runs_again(tmp_path):
    stem = tmp_path / "runs"
    done = speechperf(*BENCH, "--runs", "2", "--meters", "runtime", "--no-store", *export_args(stem))
    doc = read(file(stem, "json"))
    assert doc["process_runs"] == 2 and doc.complete
    assert "speechperf bench: 2 process runs" in done.stdout and "(σ between runs)" in done.stdout
    assert_shown_again(done.stdout, stem, [file(stem, "json")])


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("wide", [False, True])
def test_an_older_bench_document_is_shown_with_its_rows(version, wide, tmp_path):
    """tests/data/v1 and v2 (tests/data/README.md): upgraded on read, then shown as a run of today."""
    path = DATA / version / "bench.json"
    csv_path = tmp_path / "old.csv"
    done = invoke("show", path, "--csv", csv_path, *(["--wide"] if wide else []))
    assert done.exit_code == 0, done.output
    doc = read(path)
    assert doc.schema_version > json.loads(path.read_text())["schema_version"]  # upgraded
    lines = done.stdout.splitlines()
    assert "speechperf bench: S2T on onnxruntime/cpu, 1 thread(s), warmup 1, repeat 3" in lines[0]
    for row in doc.rows:
        line = next(line for line in lines if f"│ {row['stage']} " in line)
        assert stats.mean_sigma(row["mean_ms"], row["stdev_ms"]) in line
    rows = csv_path.read_text().splitlines()
    assert rows[0] == ",".join(view.COLUMNS) and [r.split(",")[1] for r in rows[1:]] == ["stage1 s2t", "total"]


def test_a_store_that_is_a_fifo_is_refused_in_one_line(tmp_path):
    """``show ID --store FIFO``: one line naming it, exit 2, never a blocked read."""
    import os

    fifo = tmp_path / "s.sqlite"
    os.mkfifo(fifo)
    done = invoke("show", "1", "--store", str(fifo))
    assert done.exit_code == 2
    assert done.output.strip().endswith("s.sqlite is a FIFO, not a regular file; a results store is an SQLite file")
