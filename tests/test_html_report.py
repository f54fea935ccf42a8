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
    total = next(r for r in doc["summary"] if r["stage"] == "total")
    for column in ("runtime_mean_ms", "runtime_median_ms", "peak_rss_mib"):
        assert f">{total[column]}<" in dom, column  # the figure, in a cell of the rendered table
    assert "Environment" in dom and doc["environment"]["cpu"] in dom
    link = re.search(r'href="data:application/json;base64,([^"]+)"', dom)
    assert link and json.loads(base64.b64decode(link.group(1)))["summary"] == doc["summary"]  # the raw numbers
    assert 'id="raw"' in dom


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
    )["summary"][0]["mean_ms"]
    assert f">{mean}<" in dom
    # The environment merges the children's: the backend key names both, not the first child's alone.
    assert '<td class="text">backend</td><td class="text">onnxruntime | torch</td>' in dom

    listing = tmp_path / "history.html"
    result = CliRunner().invoke(main, ["history", "--store", str(store), "--plot", "mean_ms", "--html", str(listing)])
    assert result.exit_code == 0, result.output
    dom, shot = browse(listing, tmp_path)
    assert "speechperf history" in dom and ">compare<" in dom and dom.count("<img") == 1
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
    for row in json.loads(out.read_text())["table"]:
        assert f'<td class="text">{row["variant"]}</td>' in text and f">{row['latency_ms']}<" in text
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(store)) as con:  # one run, the study's: its bench children store nothing
        assert con.execute("SELECT command, backends FROM runs").fetchall() == [("optimize", "onnxruntime")]
        cells = con.execute("SELECT DISTINCT cell FROM metrics WHERE metric = 'latency_ms' ORDER BY cell").fetchall()
    assert cells == [("fp32",), ("ort-dynamic",)]
