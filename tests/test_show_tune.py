"""``speechperf show`` of a tune document: a real ``speechperf tune`` (onnxruntime's fp32 variants of the tiny
reference S2T, two samples, the final compare included) and ``show`` of its JSON and of its stored id print the same
stdout and write the same CSV and Markdown."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest


def speechperf(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "speechperf", *map(str, args)], capture_output=True, text=True, timeout=900, cwd=cwd
    )


def exports(folder: Path) -> list[str]:
    return ["-o", folder / "o.json", "--csv", folder / "o.csv", "--markdown", folder / "o.md"]


def files(folder: Path) -> tuple[str, str]:
    return (folder / "o.csv").read_text(), (folder / "o.md").read_text()


@pytest.mark.slow
def test_show_prints_and_writes_what_the_tune_run_did_from_its_json_and_its_stored_id(tmp_path):
    run, store = tmp_path / "run", tmp_path / "store.sqlite"
    run.mkdir()
    ran = speechperf(
        "tune", "--preset", "tiny", "--dataset-size", "2", "--set", "general.repeat=1", "--backends", "onnxruntime",
        "--precisions", "fp32", "--final-runs", "2", "--budget", "600", "--out-dir", tmp_path / "out", *exports(run),
        "--store", store, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    # stdout is the tune's report alone: its stage table, the pipelines and the answer (the final compare's own
    # table goes to stderr)
    assert ": stage1 (s2t)" in ran.stdout and ": end to end" in ran.stdout and "\nwinner: " in ran.stdout
    assert "\n## The answer\n" in (run / "o.md").read_text()
    stored = re.search(r"tune: stored as run (\d+) in ", ran.stderr)
    assert stored, ran.stderr[-2000:]
    for result in (run / "o.json", stored.group(1)):
        again = tmp_path / f"again-{Path(str(result)).stem}"
        again.mkdir()
        shown = speechperf("show", result, "--store", store, *exports(again), cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert shown.stdout == ran.stdout
        assert files(again) == files(run)
