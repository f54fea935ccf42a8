"""``speechperf show`` on ``serving`` documents prints what ``speechperf compare --scenario`` printed and writes the
same Markdown and CSV, from the JSON file and from the store (real LoadGen over the silero VAD); upgraded version 1
and 2 compare files are shown by the same views. A plain ``compare`` document's show test is in
tests/test_compare_cli.py, on its three-backend comparison, and a ``compare-best`` document's in
tests/test_compare_best.py, on its end-to-end search (one real run each, not two).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.needs import needs
from tests.show_again import assert_shown_from_json_and_store, export_args, show, speechperf, stored_id

DATA = Path(__file__).parent / "data"


def compare(
    tmp_path: Path, name: str, *args: str, backends: str = "onnxruntime,torch", timeout: int = 300
) -> subprocess.CompletedProcess:
    """A real ``speechperf compare`` (on onnxruntime and torch unless told) with every export and a store of its
    own."""
    for backend in backends.split(","):
        pytest.importorskip(backend)
    command = ["compare", "--backends", backends, "--workdir", tmp_path / f"{name}-work"]
    command += ["--store", tmp_path / "store.sqlite", *export_args(tmp_path / name), *args]
    return speechperf(*command, timeout=timeout)


@pytest.mark.slow
@needs("librivox")
def test_show_prints_and_writes_what_a_compare_scenario_did(tmp_path):
    pytest.importorskip("mlperf_loadgen", reason='needs the loadgen extra: pip install "speechperf[loadgen]"')
    from tests.test_loadgen import vad_args

    args = [*vad_args(tmp_path, "onnxruntime")[2:], "--dataset-type", "raw", "--dataset-size", "3"]
    done = compare(tmp_path, "serving", *args, "--scenario", "Offline", "--duration", "1", timeout=240)
    assert_shown_from_json_and_store(done.stdout, tmp_path / "serving", tmp_path / "store.sqlite", stored_id(done))
    doc = json.loads((tmp_path / "serving.json").read_text())
    assert doc["kind"] == "serving"
    assert "speechperf compare --scenario Offline: ranked by samples/s, higher first" in done.stdout
    assert f"{doc['rows'][1]['cell']}: not MLPerf-compliant: duration 1 s < 600 s" in done.stdout


@pytest.mark.parametrize("name", ["v1/compare.json", "v1/compare-best.json", "v2/compare.json"])
def test_an_older_compare_document_is_shown_by_the_same_view(tmp_path, name):
    raw = json.loads((DATA / name).read_text())
    stdout, md, csv = show(DATA / name, tmp_path / "old")
    rows = raw.get("summary") or raw["rows"]
    for row in rows:  # each cell's block, with its runs counted from the raw timings the file keeps
        finished = sum(1 for r in raw["runs"] if r["label"] == row["cell"] and r.get("timings"))
        assert f"Cell: {row['cell']} ({finished} of " in stdout
        assert f"| {row['cell']} | " in md and f"\n{row['cell']}," in csv
    for ranking in raw["comparisons"]:
        assert all(f"  {c['sentence']}" in stdout.splitlines() for c in ranking)
    if "best" in raw:
        assert stdout.index("compare --best: the search") < stdout.index("Cell: ")
        assert all(f"| {r['backend']} | {r['variant']} |" in md for r in raw["best"]["search"])


def test_an_older_serving_document_is_shown_by_the_same_view(tmp_path):
    raw = json.loads((DATA / "v1" / "serving.json").read_text())
    stdout, md, csv = show(DATA / "v1" / "serving.json", tmp_path / "old")
    assert f"speechperf compare --scenario {raw['scenario']}: ranked by " in stdout
    lines = stdout.splitlines()
    for row in raw["summary"]:
        assert any(f" {row['cell']} " in line for line in lines) and f"| {row['cell']} | " in md
    header = csv.splitlines()[0].split(",")
    assert header[:3] == ["rank", "cell", "backend"] and "p90_ms" in header  # its percentile's name, upgraded
