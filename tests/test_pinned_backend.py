"""A hybrid cascade through the real CLI: a stage pinned with ``stageN.backend`` runs there whatever --backend says,
bench shows each stage's backend (table, JSON, CSV), compare varies only the unpinned stages and says so, and a
pinned backend that is unknown or not installed is one line, exit 2, before anything is measured (bench and config
check alike). Real frameworks, the tiny reference models."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--config",
    str(REPO / "configs" / "2StageS2ST.yaml"),
    "--preset",
    "tiny",
    "--dataset-size",
    "1",
    "--warmup",
    "0",
    "--repeat",
    "1",
    "--meters",
    "runtime",
    "--set",
    "stage2.backend=onnxruntime",
]
#: The CLI with onnxruntime made unimportable, exactly as when it is not installed (ModuleNotFoundError).
WITHOUT_ORT = "import sys; sys.modules['onnxruntime'] = None; from speechperf.cli import main; main()"


def run(*args: str, python: str | None = None) -> subprocess.CompletedProcess:
    head = [sys.executable, "-c", python] if python else [sys.executable, "-m", "speechperf"]
    env = {**os.environ, "COLUMNS": "250"}  # the table's columns on one line each
    return subprocess.run([*head, *args], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)


@pytest.mark.slow
def test_bench_runs_the_pinned_stage_on_its_backend_and_shows_it(tmp_path):
    out, table = tmp_path / "run.json", tmp_path / "run.csv"
    done = run("bench", "-b", "torch", *TINY, "-o", str(out), "--csv", str(table))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert [s["backend"] for s in result["result"]["stages"]] == ["torch", "onnxruntime"]
    assert [r["backend"] for r in result["rows"]] == ["torch", "onnxruntime", "torch"]
    assert result["config"]["stage2"]["backend"] == "onnxruntime"
    assert set(result["environment"]["pinned_backends"]) == {"onnxruntime"}
    rows = list(csv.DictReader(table.open()))
    assert [(r["stage"], r["backend"]) for r in rows] == [
        ("stage1 s2t", "torch"),
        ("stage2 tts", "onnxruntime"),
        ("total", "torch"),
    ]
    assert "on torch/cpu (stage2 on onnxruntime, pinned)" in done.stdout
    stage2_line = next(line for line in done.stdout.splitlines() if "stage2 tts" in line)
    assert "onnxruntime" in stage2_line


@pytest.mark.slow
def test_a_pinned_backend_that_is_not_installed_is_one_line_before_anything_runs(tmp_path):
    out = tmp_path / "run.json"
    done = run("bench", "-b", "torch", *TINY, "-o", str(out), python=WITHOUT_ORT)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ") and "stage2.backend: backend 'onnxruntime' is not available" in lines[0]
    assert "pip install" in lines[0]
    assert not out.exists()  # refused before anything was measured
    check = run("config", "check", "-b", "torch", str(REPO / "configs" / "2StageS2ST.yaml"), python=WITHOUT_ORT)
    assert check.returncode == 0, check.stderr  # unpinned, the config needs no onnxruntime
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text((REPO / "configs" / "2StageS2ST.yaml").read_text() + "  backend: onnxruntime\n")
    check = run("config", "check", "-b", "torch", str(pinned), python=WITHOUT_ORT)
    assert check.returncode == 2
    assert check.stderr.count("\n") == 1 and "stage2.backend: backend 'onnxruntime' is not available" in check.stderr


def test_an_unknown_pinned_backend_names_the_key_and_the_known_ones():
    done = run("bench", "-b", "torch", *TINY, "--set", "stage2.backend=tensorrt")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "stage2.backend: unknown backend 'tensorrt'" in done.stderr
    assert "known backends: onnxruntime, paddle, torch" in done.stderr


@pytest.mark.slow
def test_compare_varies_only_the_unpinned_stages_and_says_so(tmp_path):
    out = tmp_path / "cmp.json"
    # one cell is enough to see where its stages ran (each further cell is one more child process)
    done = run("compare", "--backends", "torch", "--runs", "1", *TINY, "--workdir", str(tmp_path / "w"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    line = "pinned: stage2 on onnxruntime in every cell (stageN.backend); only stage1 vary by backend"
    assert line in done.stderr and line in done.stdout
    assert json.loads(out.read_text())["pinned"] == line
    child = json.loads((tmp_path / "w" / "run1" / "torch" / "run.json").read_text())
    assert [s["backend"] for s in child["result"]["stages"]] == ["torch", "onnxruntime"]


def test_a_pinned_stage_is_checked_against_its_own_backends_formats():
    from speechperf.benchmark.validate import check_config
    from speechperf.config import load_config
    from speechperf.errors import SpeechperfError

    def config(fmt: str):
        sets = ["stage2.backend=torch", f"stage2.format={fmt}"]
        return load_config(REPO / "configs" / "2StageS2ST.yaml", {}, {"preset": "tiny"}, sets)

    check_config(config("torch-eager"), "onnxruntime")  # was refused: checked against the run's backend
    with pytest.raises(SpeechperfError, match=r"stage2: format 'onnx-torch' does not run on backend 'torch'"):
        check_config(config("onnx-torch"), "onnxruntime")
