"""Pruning as a technique of ``speechperf tune`` (``--precisions ...,pruned``): the pruned variants are made by
optimize's pruning (speechperf.optimize.pruning), searched as int8 is, and judged end to end by the quality budget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from speechperf.tune.space import PRUNED_VARIANTS, pending_int8_candidates, technique_methods, with_int8_files

REPO = Path(__file__).resolve().parents[1]


def test_pruned_variants_are_searched_only_when_asked_and_where_the_backend_prunes():
    assert technique_methods("onnxruntime", ("int8",)) == ("ort-dynamic", "ort-static-qdq")
    assert technique_methods("onnxruntime", ("int8", "pruned")) == ("ort-dynamic", "ort-static-qdq", *PRUNED_VARIANTS)
    assert technique_methods("paddle", ("pruned",)) == PRUNED_VARIANTS
    assert [c.precision for c in pending_int8_candidates(1, ["onnxruntime"], [1])] == [
        "int8:ort-dynamic",
        "int8:ort-static-qdq",
    ]
    first = pending_int8_candidates(1, ["onnxruntime"], [1], ("pruned",))[0]
    candidate = with_int8_files(first, {"model_dir": "/x", "format": "onnx-torch"})
    assert candidate.precision == f"pruned:{PRUNED_VARIANTS[0]}" and candidate.is_int8
    assert candidate.what == f"{PRUNED_VARIANTS[0]} pruned files"
    assert candidate.sets == ("stage1.backend=onnxruntime", 'stage1.format="onnx-torch"', 'stage1.model_dir="/x"')


@pytest.mark.slow
def test_tune_searches_the_pruned_variants_and_judges_them_end_to_end(tmp_path):
    out = tmp_path / "tune.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "speechperf", "tune", "--config", str(REPO / "configs" / "S2T.yaml"), "--preset",
            "tiny", "--dataset-size", "2", "--set", "general.repeat=1", "--backends", "onnxruntime", "--precisions",
            "pruned", "--calibration-size", "1", "--final-runs", "2", "--budget", "900", "--out-dir",
            str(tmp_path / "out"), "-o", str(out), "--no-store",
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(out.read_text())
    pruned = [r for r in doc["rows"] if r["phase"] == "stage" and str(r["precision"]).startswith("pruned")]
    assert {r["precision"] for r in pruned} == {f"pruned:{v}" for v in PRUNED_VARIANTS}
    assert all(r["mean_ms"] > 0 and r["size_mb"] > 0 for r in pruned)
    assert all(r["parity"] == "pruned: judged end to end against the quality budget" for r in pruned if r["parity"])
    assert doc["complete"] is True
    # the pruned files are the smaller FFN's (128 neurons less 13 and 38): the variants' manifests say so
    from speechperf.cache import cache_dir

    manifests = [json.loads(m.read_text()) for m in (cache_dir() / "tune" / "int8").rglob("manifest.json")]
    found = {
        (m["pruning"]["method"], m["pruning"]["sparsity"]): m["pruning"]["architecture"]
        for m in manifests
        if "pruning" in m
    }
    assert found == {("prune-ffn-l2", 0.1): {"ffn": 115}, ("prune-ffn-l2", 0.3): {"ffn": 90}}
    # each file set was made in a child process, which left its log; the backend's calibration feeds were recorded
    # once (by this tune's first file set, or by an earlier tune of the same pipeline) and read back by the others
    jobs = [j for j in (cache_dir() / "tune" / "int8").rglob("job.json") if json.loads(j.read_text())["method"] in PRUNED_VARIANTS]  # fmt: skip
    assert len(jobs) == len(PRUNED_VARIANTS)
    feeds = {json.loads(j.read_text())["feeds"] for j in jobs}
    assert len(feeds) == 1 and (Path(feeds.pop()) / "index.json").is_file()
    logs = [(j.parent / "make.log").read_text() for j in jobs]
    assert sum("recording calibration feeds" in log for log in logs) <= 1
    assert any("recorded earlier" in log for log in logs), logs
