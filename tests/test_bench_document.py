"""bench's result document: rows named as every document names its figures (WER a fraction), the console table
fitted to the terminal (``--wide`` every column), the plots of its HTML page, a whole run through the exporters, and
a version 1 file written by the code before the document still read. Fake stages: no framework is needed."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from speechperf.benchmark import report
from speechperf.meters.quality import QualityResult, QualityScore
from speechperf.results import read
from speechperf.results.figures import BY_NAME
from speechperf.views import Shown, bench_plots, view_of
from speechperf.views import bench as view
from tests.test_bench_core import FakeBackend, FakeStage, run

V1 = Path(__file__).parent / "data" / "v1" / "bench.json"
#: What a quality headline can take: BLEU, chrF, WER, CER and the normalizer, the widest cell of the key columns.
SCORE = QualityScore("total", "bleu", 3, wer=0.0625, cer=0.03125, bleu=23.456, chrf=51.2, normalizer="whisper-english")


@pytest.fixture(scope="module")
def cascade():
    """A 3-stage cascade, its total scored: every key column has a value, the quality cell is long."""
    _, result = run(
        [FakeStage("s2t"), FakeStage("mt"), FakeStage("tts", speech=True)], model_type="3StageS2ST", meters=("runtime",)
    )
    return attrs.evolve(result, quality=QualityResult((SCORE,), 0.1, "refs.txt"))


@pytest.fixture(scope="module")
def doc(cascade):
    """The cascade's document, as the views and the plots take it."""
    return report.document(cascade, {"general": {"model_type": "3StageS2ST"}}, {"backend": "fake"})


def test_rows_name_the_shared_figures_and_keep_wer_as_a_fraction(cascade):
    rows = report.rows(cascade)
    total = rows[-1]
    assert total["wer"] == 0.0625 and total["cer"] == 0.03125  # fractions, as result.quality.scores[].wer
    assert total["bleu"] == 23.46 and total["quality"].startswith("BLEU 23.5 chrF 51.2 WER 6.2% CER 3.1%")
    assert total["mean_ms"] == round(cascade.totals.runtime.mean * 1e3, 3)
    assert total["p90_ms"] == round(cascade.totals.runtime.p90 * 1e3, 3)
    for old in ("runtime_mean_ms", "runtime_stdev_ms", "runtime_median_ms", "runtime_p90_ms"):
        assert old not in total
    # Every figure a row shares with the other kinds is named as speechperf.results.figures names it.
    assert {"mean_ms", "stdev_ms", "median_ms", "p90_ms", "rtf", "peak_rss_mib", "wer", "cer", "bleu"} <= set(BY_NAME)
    assert set(view.KEY_COLUMNS) <= set(view.COLUMNS) and set(rows[0]) == set(view.COLUMNS)
    assert view_of("bench") is view.VIEW


def test_html_rows_are_rounded_as_the_console_shows_them(cascade):
    shown = view.shown_rows(report.rows(cascade))[-1]
    assert shown["wer"] == "6.25%" and shown["bleu"] == "23.46" and shown["rtf"].count(".") == 1
    assert shown["peak_rss_mib"] is None  # not measured here: left for the table to drop, not shown as "None"
    assert view.HTML_COLUMNS[: len(view.KEY_COLUMNS)] == view.KEY_COLUMNS
    assert sorted(view.HTML_COLUMNS) == sorted(view.COLUMNS)


@pytest.mark.parametrize("width", [100, 120])
def test_the_table_fits_the_terminal(doc, width):
    text = view.console(doc, Shown(width=width))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, "\n" + text
    for key in ("stage", "model", "mean ± σ", "p90", "RTF", "peak RSS", "GFLOPs", "quality", "stage3 tts"):
        assert key in text
    assert "footprint" not in text and "samples/s" not in text  # the rest is --wide's


def test_wide_shows_every_column_unwrapped(doc):
    text = view.console(doc, Shown(wide=True))
    header = next(line for line in text.splitlines() if "footprint" in line)
    for column in ("median", "ms/batch", "samples/s", "audio s/s", "1st call, new shape", "GFLOP/s (roofline)"):
        assert column in header
    assert max(len(line) for line in text.splitlines()) > 120  # one line per row, as wide as it takes
    assert sum("stage3 tts" in line for line in text.splitlines()) == 1


def test_the_table_fits_a_pipe_at_100_columns(doc):
    import io

    from speechperf import tables

    out = io.StringIO()  # no terminal: 100 columns
    text = view.console(doc, Shown(width=tables.terminal_width(out)))
    assert tables.terminal_width(out) == 100 and max(map(len, text.splitlines())) <= 100


def test_the_title_says_how_it_was_measured(doc):
    title = view.console(doc, Shown()).splitlines()[0].strip()
    assert title.startswith("speechperf bench: 3StageS2ST on fake/cpu, 1 thread(s), warmup")
    assert view.title(doc) == "speechperf bench: 3StageS2ST on fake"


@pytest.mark.slow  # matplotlib's import alone takes about 2 s
def test_plots_of_the_length_fit_and_the_per_sample_runtimes(doc, tmp_path):
    pytest.importorskip("matplotlib")
    drawn = bench_plots.draw(doc, tmp_path)
    assert [p.name for p in drawn] == ["bench-length.png", "bench-runtime.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in drawn)


def test_plots_without_matplotlib_are_a_note(doc, tmp_path, monkeypatch, caplog):
    from speechperf.extras import MissingExtraError

    def missing(module, what):
        raise MissingExtraError(f"{what} needs the matplotlib package, which is not installed")

    monkeypatch.setattr(bench_plots, "require", missing)
    caplog.set_level("INFO", logger="speechperf")
    assert bench_plots.draw(doc, tmp_path) == [] and list(tmp_path.iterdir()) == []
    assert "note: the plots of --html needs the matplotlib package" in caplog.text


@pytest.mark.slow
def test_a_run_writes_one_bench_document_with_notes_load_and_plots(tmp_path, monkeypatch):
    from speechperf.benchmark import build, runner
    from speechperf.config import default_config
    from speechperf.exports import Exports
    from speechperf.registry import register_backend, unregister_backend
    from speechperf.store.keep import Keep

    pytest.importorskip("matplotlib")
    register_backend("fake", FakeBackend)
    monkeypatch.setattr(build, "prepare_stages", lambda *a, **k: None)
    monkeypatch.setattr(build, "build_stages", lambda *a, **k: [FakeStage("s2t")])
    cfg = default_config(
        {"backend": "fake", "dataset_size": 4, "generated_seconds": [0.25, 1.0], "meters": ["runtime"]}
    )
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    try:
        options = runner.BenchOptions(
            workdir=tmp_path, exports=Exports(json=out, keep=Keep(None, page)), progress=False
        )
        code = runner.run_benchmark(cfg, options, out=open(tmp_path / "t", "w"))
    finally:
        unregister_backend("fake")
    assert code == 0
    doc = read(out, kinds=("bench",))
    assert doc.complete and [r["stage"] for r in doc.rows] == ["stage1 s2t", "total"]
    assert doc.environment["backend"] == "fake" and doc.environment["threads"] == 1
    assert {"busy_cores_others", "loadavg_before"} <= set(doc.environment["load"])
    assert any(n.startswith("cost against input length, stage1 s2t:") for n in doc.notes), doc.notes
    assert set(doc["length_fit"]) == {"stage1 s2t"} and doc["result"]["stages"][0]["runtime"]["samples"]
    html = page.read_text()
    assert html.count("<img") == 2 and "<th>mean_ms</th>" in html


def test_a_version_1_file_reads_as_a_bench_document():
    """tests/data/v1/bench.json: written by `speechperf bench` before the result document (tests/data/README.md)."""
    doc = read(V1, kinds=("bench",))
    assert doc.kind == "bench" and doc.complete and doc["result"]["stages"][0]["runtime"]["samples"]
    assert [r["stage"] for r in doc.rows] == ["stage1 s2t", "total"]
    total = doc.rows[-1]
    v1_total = json.loads(V1.read_text())["summary"][-1]
    assert total["mean_ms"] == v1_total["runtime_mean_ms"] and total["p90_ms"] == v1_total["runtime_p90_ms"]
    assert total["stdev_ms"] == v1_total["runtime_stdev_ms"] and total["median_ms"] == v1_total["runtime_median_ms"]
    assert not any(key.startswith("runtime_") for key in total)
    assert doc.environment["backend"] == "onnxruntime" and "length_fit" in doc.body


def test_a_version_1_wer_in_percent_reads_as_a_fraction(tmp_path):
    """Version 1 kept summary[].wer in percent (the tiny model of the fixture puts out no text to score, so its
    wer is null): the same file with a WER of 6.25% reads as 0.0625."""
    data = json.loads(V1.read_text())
    data["summary"][-1].update(wer=6.25, cer=3.13)
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    total = read(path).rows[-1]
    assert total["wer"] == pytest.approx(0.0625) and total["cer"] == pytest.approx(0.0313)
