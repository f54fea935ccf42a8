"""``--html FILE`` (speechperf.store.html, docs/history.md) from real runs of the tiny S2T on onnxruntime, opened
in a real headless browser (Debian's chromium; .ci/run installs it): the page renders (the screenshot is not
blank), the table's figures are in its DOM, it needs no network, and hostile paths are refused with one line."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.results import Document, read
from speechperf.results.figures import shown
from tests.needs import missing, program
from tests.test_outputs import one_line_error

CHROMIUM = program("chromium")
NO_CHROMIUM = missing("chromium") or ""
FAST = ["--dataset-size", "3", "--warmup", "1", "--repeat", "1"]


def run(*args: str):
    return CliRunner().invoke(main, [*args, "--no-store"])


def browse(page: Path, tmp_path: Path) -> tuple[str, Path]:
    """The DOM chromium builds from ``page`` and a screenshot of it, with every network request refused."""
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"]
    common += [f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9", "--no-first-run"]
    shot = tmp_path / "shot.png"
    url = page.resolve().as_uri()
    subprocess.run([*common, f"--screenshot={shot}", url], check=True, capture_output=True, timeout=120)
    dom = subprocess.run([*common, "--dump-dom", url], check=True, capture_output=True, text=True, timeout=120)
    return dom.stdout, shot


def not_blank(png: Path) -> float:
    import matplotlib.image

    pixels = matplotlib.image.imread(png)
    assert pixels.shape[0] >= 900 and pixels.shape[1] >= 1300, pixels.shape
    return float(pixels[..., :3].std())


def self_contained(text: str) -> None:
    assert "<script" not in text and "<link" not in text
    assert not re.search(r"""(?:src|href)=["'](?!data:|#)""", text)  # only data: URIs and anchors


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_bench_html_renders_in_chromium_with_the_tables_figures(tmp_path):
    page, out = tmp_path / "bench.html", tmp_path / "bench.json"
    result = run("bench", "-b", "onnxruntime", *FAST, "--quiet", "--html", str(page), "-o", str(out))
    assert result.exit_code == 0, result.output
    text = page.read_text()
    self_contained(text)
    dom, shot = browse(page, tmp_path)
    assert not_blank(shot) > 0.02
    doc = json.loads(out.read_text())
    total = next(r for r in doc["rows"] if r["stage"] == "total")
    for column in ("mean_ms", "median_ms", "peak_rss_mib"):
        assert f">{shown(column, total[column])}<" in dom, column  # the figure as the console rounds it, in a cell
    assert "Environment" in dom and doc["environment"]["cpu"] in dom
    link = re.search(r'href="data:application/json;base64,([^"]+)"', dom)
    assert link and json.loads(base64.b64decode(link.group(1)))["rows"] == doc["rows"]  # the raw numbers
    assert 'id="raw"' in dom
    assert "$ speechperf bench -b onnxruntime" in dom  # the command line


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_compare_html_has_its_plots_inline_and_history_html_its_runs(tmp_path):
    page, store = tmp_path / "compare.html", tmp_path / "s.sqlite"
    args = ["compare", "--backends", "onnxruntime,torch", "--runs", "2", *FAST, "--html", str(page)]
    result = CliRunner().invoke(main, [*args, "--store", str(store)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    self_contained(text)
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,', text)
    assert images[:2] == ["compare.png", "compare.length.png"]  # the box plot and the length plot, drawn for it
    dom, shot = browse(page, tmp_path)
    assert not_blank(shot) > 0.02 and dom.count("<img") == len(images)
    mean = json.loads(
        re.search(r"<pre>(.*?)</pre>", text, re.S)
        .group(1)
        .replace("&quot;", '"')
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
    )["rows"][0]["mean_ms"]
    assert f">{shown('mean_ms', mean)}<" in dom
    # The environment merges the children's: the backend key names both, not the first child's alone.
    assert '<td class="text">backend</td><td class="text">onnxruntime | torch</td>' in dom

    listing = tmp_path / "history.html"
    result = CliRunner().invoke(main, ["history", "--store", str(store), "--plot", "mean_ms", "--html", str(listing)])
    assert result.exit_code == 0, result.output
    dom, shot = browse(listing, tmp_path)
    assert "speechperf history" in dom and ">compare<" in dom and dom.count("<img") == 1
    assert "$ speechperf history --store" in dom
    assert not_blank(shot) > 0.02


def test_html_into_a_fifo_or_an_unwritable_folder_is_one_line_before_any_work(tmp_path):
    import os

    fifo = tmp_path / "report.html"
    os.mkfifo(fifo)
    one_line_error(run("bench", "-b", "onnxruntime", *FAST, "--html", str(fifo)), "--html", "is a FIFO")
    assert fifo.is_fifo()
    folder = Path("/proc/self")  # not writable even for root
    if not folder.is_dir():
        pytest.skip("no /proc on this system")
    one_line_error(
        run("bench", "-b", "onnxruntime", *FAST, "--html", str(folder / "report.html")), "--html", "is not writable"
    )


@pytest.mark.slow
def test_optimize_html_and_store_hold_every_variant(tmp_path):
    page, out, store = tmp_path / "o.html", tmp_path / "o.json", tmp_path / "o.sqlite"
    args = ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--runs", "1", "--dataset-size", "3"]
    result = CliRunner().invoke(main, [*args, "--html", str(page), "-o", str(out), "--store", str(store)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    self_contained(text)
    for row in read(out).rows:
        assert f'<td class="text">{row["variant"]}</td>' in text and f">{shown('mean_ms', row['mean_ms'])}<" in text
    assert '<img alt="optimize.png" src="data:image/png;base64,' in text  # the trade-off, drawn for the page
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(store)) as con:  # one run, the study's: its bench children store nothing
        assert con.execute("SELECT command, backends FROM runs").fetchall() == [("optimize", "onnxruntime")]
        cells = con.execute("SELECT DISTINCT cell FROM metrics WHERE metric = 'mean_ms' ORDER BY cell").fetchall()
    assert cells == [("fp32",), ("ort-dynamic",)]


def loadgen_page(tmp_path: Path) -> tuple[Path, Document]:
    """A loadgen document with a note, a warning and a row wider than the page, through the exporters' --html."""
    from speechperf.exports import Exports
    from speechperf.results.loadgen_table import COLUMNS
    from speechperf.store.keep import Keep

    row = {c: None for c in COLUMNS}
    row.update(scenario="Offline", mode="performance", backend="onnxruntime", instances=1, threads=1)
    row.update(result="VALID", headline="48.81 samples/s", samples_per_s=48.81, p90_ms=1.8849999999999998)
    row.update(p50_ms=1.1, p99_ms=2.5, samples=400, compliance="not MLPerf-compliant: duration 1 s < 600 s")
    doc = Document(
        kind="loadgen",
        command=["speechperf", "loadgen", "-b", "onnxruntime", "--scenario", "Offline"],
        rows=[row],
        notes=["Offline: not MLPerf-compliant: duration 1 s < 600 s"],
        warnings=["the machine was busy: 1.5 other cores"],
        environment={"cpu": "Test CPU 9000", "packages": {"numpy": "2.0"}},
        complete=True,
    )
    page = tmp_path / "loadgen.html"
    Exports(keep=Keep(None, page)).check().finish(doc, 0, title="speechperf loadgen: Offline on onnxruntime")
    return page, doc


def test_a_document_page_has_its_command_notes_warnings_and_rounded_figures(tmp_path):
    page, doc = loadgen_page(tmp_path)
    text = page.read_text()
    self_contained(text)
    assert '<p class="command">$ speechperf loadgen -b onnxruntime --scenario Offline</p>' in text
    assert "<li>Offline: not MLPerf-compliant: duration 1 s &lt; 600 s</li>" in text
    assert '<ul class="warnings"><li>the machine was busy: 1.5 other cores</li></ul>' in text
    assert ">1.885<" in text and "1.8849999999999998<" not in text  # rounded as the console rounds p90_ms
    assert '<td class="text">packages.numpy</td><td class="text">2.0</td>' in text  # the environment, flattened
    first = text.split("<details>")[0]  # the key columns, before the details block with every column
    assert "<th>p90_ms</th>" in first and "<th>compliance</th>" not in first
    assert "every column (" in text and "<th>compliance</th>" in text.split("<details>")[1]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_a_document_page_shows_its_command_line_and_notes_in_chromium(tmp_path):
    page, _ = loadgen_page(tmp_path)
    dom, shot = browse(page, tmp_path)
    assert not_blank(shot) > 0.02
    assert "$ speechperf loadgen -b onnxruntime --scenario Offline" in dom
    assert "Offline: not MLPerf-compliant: duration 1 s &lt; 600 s" in dom and ">1.885<" in dom
