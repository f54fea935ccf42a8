"""``speechperf show`` of an optimize document: a real ``speechperf optimize`` run (onnxruntime, the tiny reference
S2T, one int8 method, one run per variant) and ``show`` of its JSON and of its stored id print the same stdout and
write the same CSV and Markdown; a version 1 document (before the envelope) is shown from its upgraded rows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def speechperf(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "speechperf", *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd
    )


def exports(folder: Path) -> list[str]:
    return ["-o", folder / "o.json", "--csv", folder / "o.csv", "--markdown", folder / "o.md"]


def files(folder: Path) -> tuple[str, str]:
    return (folder / "o.csv").read_text(), (folder / "o.md").read_text()


@pytest.mark.slow
def test_show_prints_and_writes_what_the_optimize_run_did_from_its_json_and_its_stored_id(tmp_path):
    run, store = tmp_path / "run", tmp_path / "store.sqlite"
    run.mkdir()
    ran = speechperf(
        "optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--runs", "1", "--preset", "tiny",
        "--dataset-size", "3", "--calibration-size", "2", "--set", "general.repeat=1", "--set", "general.warmup=1",
        "--out-dir", tmp_path / "variants", *exports(run), "--store", store, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "speechperf optimize: " in ran.stdout and "| ort-dynamic |" in (run / "o.md").read_text()
    stored = re.search(r"optimize: stored as run (\d+) in ", ran.stderr)
    assert stored, ran.stderr[-2000:]
    for result in (run / "o.json", stored.group(1)):
        again = tmp_path / f"again-{Path(str(result)).stem}"
        again.mkdir()
        shown = speechperf("show", result, "--store", store, *exports(again), cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert shown.stdout == ran.stdout
        assert files(again) == files(run)


def test_a_version_1_optimize_document_is_shown_from_its_upgraded_rows(tmp_path):
    """tests/data/v1/optimize.json: written before the envelope; its latency_ms is shown as mean_ms is."""
    shown = speechperf("show", DATA / "v1" / "optimize.json", "--markdown", tmp_path / "o.md", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "speechperf optimize: " in shown.stdout and "speed-up vs fp32" in shown.stdout
    markdown = (tmp_path / "o.md").read_text().splitlines()
    assert markdown[0].startswith("| variant | status | size MB (x fp32) | latency ms mean ± σ |")
    assert markdown[3].startswith("| ort-dynamic | ") and " | 7.20 ± 0.60 | 1.23" in markdown[3]
