"""``speechperf show`` on bench's documents: a real ``speechperf bench`` (onnxruntime, the built-in tiny S2T) with
every export, then ``show`` on its JSON and on its id in the store prints the same stdout and writes the same
Markdown, CSV and JSON, with ``--wide`` too; the HTML page has the same table and plots; a document of ``bench --runs
2`` shows its runs again; older schema versions (tests/data/v1, v2) are shown with their rows.

No assertion depends on a timing: each compares what the run printed or wrote with what ``show`` gives from the file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf import stats
from speechperf.cli import main
from speechperf.results import read
from speechperf.views import bench as view

SPEECHPERF = [sys.executable, "-m", "speechperf"]
#: The cheapest run that still has every meter of the default: 4 generated clips of two lengths, 2 repeats.
BENCH = ["bench", "-b", "onnxruntime", "--threads", "1", "--dataset-size", "4", "--repeat", "2", "--quiet"]
DATA = Path(__file__).parent / "data"
EXPORTS = ("json", "md", "csv")


def cli(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([*SPEECHPERF, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def exports(folder: Path, name: str) -> dict[str, Path]:
    return {suffix: folder / f"{name}.{suffix}" for suffix in (*EXPORTS, "html")}


def export_args(files: dict[str, Path]) -> list[str]:
    return ["-o", str(files["json"]), "--markdown", str(files["md"]), "--csv", str(files["csv"])]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    """A plain run and a --wide one, each with every export, kept in one store: their files, stdout and store id."""
    folder = tmp_path_factory.mktemp("show-bench")
    store = folder / "results.sqlite"
    made = {}
    for name, more in (("plain", []), ("wide", ["--wide"])):
        files = exports(folder, name)
        done = cli(*BENCH, *more, *export_args(files), "--store", str(store), "--html", str(files["html"]))
        stored = re.search(r"stored as run (\d+) in", done.stderr)
        assert stored, done.stderr
        made[name] = {"files": files, "stdout": done.stdout, "id": stored.group(1), "more": more, "store": store}
    return made


def shown_again(run: dict, source: str, folder: Path) -> tuple[str, dict[str, Path]]:
    files = exports(folder, "again")
    done = cli("show", source, *run["more"], *export_args(files), "--store", str(run["store"]))
    return done.stdout, files


@pytest.mark.slow
@pytest.mark.parametrize("name", ["plain", "wide"])
@pytest.mark.parametrize("by", ["file", "id"])
def test_show_gives_what_the_run_printed_and_wrote(runs, name, by, tmp_path):
    run = runs[name]
    source = str(run["files"]["json"]) if by == "file" else run["id"]
    stdout, files = shown_again(run, source, tmp_path)
    assert stdout == run["stdout"]
    for suffix in ("md", "csv"):
        assert files[suffix].read_text() == run["files"][suffix].read_text(), suffix
    assert json.loads(files["json"].read_text()) == json.loads(run["files"]["json"].read_text())
    # what was compared is the run's table, not an empty one
    doc = read(run["files"]["json"])
    assert doc.complete and [r["stage"] for r in doc.rows] == ["stage1 s2t", "total"]
    total = stats.mean_sigma(doc.rows[-1]["mean_ms"], doc.rows[-1]["stdev_ms"])
    assert total in stdout and "speechperf bench: S2T on onnxruntime/cpu, 1 thread(s)" in stdout
    assert ("footprint" in stdout) == (name == "wide")


@pytest.mark.slow
def test_the_page_again_has_the_runs_table_and_plots(runs, tmp_path):
    pytest.importorskip("matplotlib")
    run = runs["plain"]
    page = tmp_path / "again.html"
    cli("show", str(run["files"]["json"]), "--html", str(page))
    table = view.html_tables(read(run["files"]["json"]))[0]
    first, again = run["files"]["html"].read_text(), page.read_text()
    assert table in first and table in again and "<th>mean_ms</th>" in table
    assert first.count("<img") == again.count("<img") == 2


@pytest.mark.slow
def test_show_gives_the_runs_of_bench_runs_again(tmp_path):
    files = exports(tmp_path, "runs")
    done = cli(*BENCH, "--runs", "2", "--meters", "runtime", "--no-store", *export_args(files))
    doc = read(files["json"])
    assert doc["process_runs"] == 2 and doc.complete
    assert "speechperf bench: 2 process runs" in done.stdout and "(σ between runs)" in done.stdout
    again = exports(tmp_path, "again")
    assert cli("show", str(files["json"]), *export_args(again)).stdout == done.stdout
    for suffix in ("md", "csv"):
        assert again[suffix].read_text() == files[suffix].read_text(), suffix


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("wide", [False, True])
def test_an_older_bench_document_is_shown_with_its_rows(version, wide, tmp_path):
    """tests/data/v1 and v2 (tests/data/README.md): upgraded on read, then shown as a run of today."""
    path = DATA / version / "bench.json"
    csv_path = tmp_path / "old.csv"
    done = CliRunner().invoke(main, ["show", str(path), "--csv", str(csv_path), *(["--wide"] if wide else [])])
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
