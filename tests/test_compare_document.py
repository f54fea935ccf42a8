"""compare's result documents (docs/results.md): version 1 files the code before issue 33 wrote read as their kind,
with the rows named as speechperf.results.figures names them; quality as a fraction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speechperf.compare.quality import CellQuality
from speechperf.compare.report import COLUMNS, quality_figures
from speechperf.results import loads, read
from speechperf.results.figures import BY_NAME

V1 = Path(__file__).parent / "data" / "v1"
#: the figures every finished cell of a compare row has, under figures.py's names
TIMING = ("mean_ms", "min_ms", "max_ms", "median_ms", "p90_ms", "p99_ms", "samples_per_s", "rtf")


@pytest.mark.parametrize("kind", ["compare", "compare-best"])
def test_a_version_1_compare_reads_as_its_kind_with_figures_py_names(kind):
    raw = json.loads((V1 / f"{kind}.json").read_text())
    doc = read(V1 / f"{kind}.json", kinds=(kind,))
    assert doc.kind == kind and doc.schema_version == 4 and doc.complete is True
    assert [r["cell"] for r in doc.rows] == [r["cell"] for r in raw["summary"]]
    for row, old in zip(doc.rows, raw["summary"], strict=True):
        assert all(name in BY_NAME and row[name] == old[name] > 0 for name in TIMING)
        assert row["stdev_ms"] == old["stdev_ms"]  # None with one run (compare-best's fixture)
        assert "quality_points" not in row and row["wer"] is None  # the tiny S2T writes token ids: no score
    assert doc["cells"] == raw["cells"] and doc["runs"] == raw["runs"] and doc["comparisons"] == raw["comparisons"]
    assert doc.config == raw["config"] and doc.warnings == raw["warnings"]
    if kind == "compare-best":
        assert doc["best"]["winners"] == raw["best"]["winners"] and doc["best"]["search"]


def test_a_version_1_serving_reads_with_its_latency_percentile_named():
    raw = json.loads((V1 / "serving.json").read_text())
    doc = read(V1 / "serving.json", kinds=("serving",))
    assert doc.kind == "serving" and doc["scenario"] == "SingleStream" and doc["ranked_by"]["metric"] == "p90_ms"
    assert doc["results"] == raw["rows"]  # version 1's raw rows keep their name of version 2
    for row, old in zip(doc.rows, raw["summary"], strict=True):
        assert row["metric"] == "p90_ms" and row["p90_ms"] == old["latency_ms"] == old["value"] > 0
        assert row["audio_s_per_s"] == old["rtfx"] and "value" not in row and "rtfx" not in row


def test_a_version_1_quality_in_points_becomes_a_wer_fraction_or_bleu_points():
    raw = json.loads((V1 / "compare.json").read_text())
    raw["summary"][0].update(quality_metric="WER", quality_points=6.25)
    raw["summary"][1].update(quality_metric="BLEU", quality_points=31.4)
    rows = loads(json.dumps(raw)).rows
    assert rows[0]["wer"] == pytest.approx(0.0625) and rows[0]["bleu"] is None
    assert rows[1]["bleu"] == 31.4 and rows[1]["wer"] is None


def test_the_rows_keep_a_wer_as_a_fraction_and_bleu_in_points():
    wer = quality_figures(CellQuality("a", "WER 6.25%", "WER", 6.25))
    assert wer == {"wer": 0.0625, "bleu": None, "agreement": None}
    assert quality_figures(CellQuality("b", "BLEU 31.40", "ASR-BLEU", 31.4))["bleu"] == 31.4
    assert quality_figures(None) == dict.fromkeys(("wer", "bleu", "agreement"))
    assert len(COLUMNS) == len(set(COLUMNS)) and "quality_points" not in COLUMNS
