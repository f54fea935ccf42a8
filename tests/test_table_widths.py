"""The diff, history and loadgen tables within a 120-column terminal (``speechperf.tables.FIT``), their text columns
wrapping, and ``--wide`` for the rest: every column, as wide as it takes. Fast: documents from tests/data (a version
1 peak search, the version 3 diffs) and a listing made here, shown through their views."""

from __future__ import annotations

from pathlib import Path

from speechperf.results import Document, read
from speechperf.tables import FIT
from speechperf.views import Shown, view_of

DATA = Path(__file__).parent / "data"


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines() if "│" in line or "┃" in line)


def shown(doc: Document, wide: bool = False) -> str:
    return view_of(doc.kind).console(doc, Shown(wide=wide))


def test_a_peak_searchs_table_fits_and_wide_adds_the_rates_and_the_bracket():
    doc = read(DATA / "v1" / "loadgen-peak.json")
    narrow, wide = shown(doc), shown(doc, wide=True)
    assert widest(narrow) <= FIT < widest(wide)
    assert "completed_qps" not in narrow and "completed_qps" in wide and "scheduled_qps" in wide


def test_a_timing_diff_fits_and_wide_adds_the_ratios_of_median_p90_rss_and_wer():
    doc = read(DATA / "v3" / "diff-bench.json")
    doc.rows[0]["verdict"] = "not gated (brackets overlap)"  # the longest verdict wraps inside its column
    doc.rows[0]["unit"] = "onnxruntime t2 stage2 t2s-acoustic-model"
    narrow, wide = shown(doc), shown(doc, wide=True)
    assert widest(narrow) <= FIT
    assert "peak RSS" not in narrow and "peak RSS" in wide and "median" in wide


def test_a_serving_diff_fits():
    assert widest(shown(read(DATA / "v3" / "diff-loadgen.json"))) <= FIT


def test_a_history_listing_fits_with_the_time_to_the_minute_and_wide_keeps_every_value_whole():
    row = {
        "id": 1234,
        "time": "2026-12-04T18:06:43+00:00",
        "kind": "compare-best",
        "model": "whisper-tiny-en, marian-en-de, piper-de",
        "config": "/home/someone/projects/speech/configs/S2ST-en-de.yaml",
        "backends": "onnxruntime,paddle,torch",
        "commit": "0123456789ab",
        "headline": "onnxruntime 25.298, paddle 40.112, torch 62.562 (mean_ms)",
    }
    doc = Document(kind="history", rows=[row], body={"store": "/root/.cache/speechperf/results.sqlite"})
    narrow, wide = shown(doc), shown(doc, wide=True)
    assert widest(narrow) <= FIT < widest(wide)
    assert "2026-12-04 18:06 " in narrow and row["time"] in wide and row["headline"] in wide
