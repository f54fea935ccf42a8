"""The zoo builds only what a run asks for: `bench --backend onnxruntime` on a fresh cache runs the onnx-torch
export, so it needs torch and not paddle; a build that fails in the child is one line naming its saved log.

Each test runs the real CLI in a child with a fresh SPEECHPERF_CACHE_DIR and a sitecustomize that makes the named
frameworks unimportable (``import paddle`` raises ImportError there and in the build child it starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
HIDE = """
import sys


class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ImportError(f"No module named {{name!r}} (hidden by the test)")
        return None


sys.meta_path.insert(0, _Hidden())
"""


def bench_without(tmp_path: Path, hidden: set[str], *args: str) -> subprocess.CompletedProcess:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(textwrap.dedent(HIDE.format(hidden=sorted(hidden))))
    env = {**os.environ, "SPEECHPERF_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(shim)}
    command = [sys.executable, "-m", "speechperf", "bench", "--backend", "onnxruntime", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def test_onnxruntime_bench_on_a_fresh_cache_needs_no_paddle(tmp_path):
    args = ("--config", "configs/S2T.yaml", "--preset", "tiny", "--dataset-size", "2", "--repeat", "1")
    done = bench_without(tmp_path, {"paddle", "paddle2onnx"}, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "built s2t/tiny" in done.stderr
    folder = tmp_path / "cache" / "zoo" / "tiny" / "s2t"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert "onnx-torch" in manifest["formats"] and "onnx-paddle" not in manifest["formats"]
    assert set(manifest["frameworks"]) == {"torch"}
    assert not (folder / "paddle").exists()


def test_a_failed_build_is_one_line_naming_its_log(tmp_path):
    """Without torch nothing can write the weights: the build child fails, and the console says so in one line."""
    args = ("--config", "configs/S2T.yaml", "--preset", "tiny", "--dataset-size", "1")
    done = bench_without(tmp_path, {"paddle", "paddle2onnx", "torch"}, *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    failed = [line for line in done.stderr.splitlines() if "building reference model s2t/tiny failed" in line]
    assert len(failed) == 1, done.stderr
    assert "backend 'torch' is not available" in failed[0]
    log = Path(failed[0].rsplit("full log: ", 1)[1].strip())
    assert log.parent == tmp_path / "cache" / "zoo" / "tiny" and "Traceback" in log.read_text()
    assert done.stderr.strip().splitlines()[-1] == failed[0]


def test_a_format_the_folder_lacks_is_added(tmp_path, monkeypatch):
    pytest.importorskip("paddle")
    from speechperf.zoo.build import ensure_built, is_built, read_manifest

    folder = ensure_built("mel_vocoder", "tiny", tmp_path, formats=["onnx-torch"])
    assert set(read_manifest(folder)["frameworks"]) == {"torch"}
    assert not is_built(folder, ["onnx-paddle"]) and is_built(folder, ["torchscript"])
    ensure_built("mel_vocoder", "tiny", tmp_path, formats=["onnx-paddle"])
    manifest = read_manifest(folder)
    assert {"onnx-torch", "onnx-paddle"} <= set(manifest["formats"])
    assert (folder / "paddle" / "generator.onnx").exists()
    # No formats named: every one, so a folder a partial build left is completed, never taken as it is.
    folder = ensure_built("unit_vocoder", "tiny", tmp_path, formats=["onnx-torch"])
    assert "onnx-paddle" not in read_manifest(folder)["formats"]
    ensure_built("unit_vocoder", "tiny", tmp_path)
    assert set(read_manifest(folder)["formats"]) >= {"torch-eager", "onnx-torch", "paddle-eager", "onnx-paddle"}


def test_a_second_process_waits_for_the_build_lock_and_finds_the_model_built(tmp_path):
    """Two processes asking for one model at once (a compare's children, parallel test workers): the second waits
    while the first builds, then finds the model built instead of building it again over the first's folder."""
    from speechperf.zoo.build import build_lock, build_model

    child = (
        "import sys; from speechperf.zoo.build import ensure_built; "
        "ensure_built('mel_vocoder', 'tiny', sys.argv[1], formats=['onnx-torch'])"
    )
    with build_lock(tmp_path, "mel_vocoder"):
        waiting = subprocess.Popen([sys.executable, "-c", child, str(tmp_path)], cwd=ROOT)
        build_model("mel_vocoder", "tiny", tmp_path, ["onnx-torch"])
        written = (tmp_path / "mel_vocoder" / "manifest.json").stat().st_mtime_ns
    assert waiting.wait(timeout=120) == 0
    assert (tmp_path / "mel_vocoder" / "manifest.json").stat().st_mtime_ns == written


def test_zoo_build_without_paddle_builds_the_other_frameworks_formats_and_says_so(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(textwrap.dedent(HIDE.format(hidden=["paddle", "paddle2onnx"])))
    env = {**os.environ, "SPEECHPERF_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(shim)}
    out = tmp_path / "zoo"
    command = [sys.executable, "-m", "speechperf", "zoo", "build", "--model", "s2t", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    notes = [line for line in done.stderr.splitlines() if "formats" in line and "not built" in line]
    assert len(notes) == 1 and notes[0].startswith("note: the paddle formats (") and "paddle" in notes[0], done.stderr
    assert "pip install" in notes[0]
    manifest = json.loads((out / "s2t" / "manifest.json").read_text())
    assert {"torch-eager", "torchscript", "onnx-torch"} <= set(manifest["formats"])
    assert not any("paddle" in fmt for fmt in manifest["formats"]) and set(manifest["frameworks"]) == {"torch"}
