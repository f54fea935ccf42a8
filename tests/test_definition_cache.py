"""Built zoo models and FLOP counts are keyed on the sources that define the models (speechperf.cache.definition_hash),
not on a version number that does not change when the code does: editing a definition rebuilds and recounts
(issue 18, stale caches). The edits are made to a copy of the definition folders, which the test points
speechperf.cache.definition_folders at (in this process, and through sitecustomize in the CLI's processes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from speechperf import cache
from speechperf.backend import ModelSpec
from speechperf.meters.flops_cache import DiskFlopCache
from speechperf.zoo import build
from tests.test_flops_cache import CallsCounted, matmul_file

SITECUSTOMIZE = """
import os
from pathlib import Path

import speechperf.cache

speechperf.cache.definition_folders = lambda: [Path(p) for p in os.environ["DEFINITIONS"].split(os.pathsep)]
"""


@pytest.fixture
def definitions(tmp_path, monkeypatch) -> Path:
    """A copy of the definition folders (same relative names, so the same hash as the real ones), used in place of
    them by this process; returns the copy's root."""
    root = tmp_path / "tree"
    copies = []
    for folder in cache.definition_folders():
        copy = root / folder.parent.name / folder.name
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(copy)
    real = cache.definition_hash()
    monkeypatch.setattr(cache, "definition_folders", lambda: copies)
    cache.definition_hash.cache_clear()
    assert cache.definition_hash() == real  # an untouched copy: nothing is stale
    yield root
    cache.definition_hash.cache_clear()


def edit(root: Path, relative: str) -> None:
    """Change a definition file the way a developer does (here: a line that changes nothing it computes)."""
    path = root / relative
    path.write_text(path.read_text() + "\n# edited\n")
    cache.definition_hash.cache_clear()


def test_editing_a_definition_changes_that_models_key_and_the_shared_files_change_every_key(definitions):
    s2t, mt = build.definitions_of("s2t"), build.definitions_of("mt")
    edit(definitions, "torch/models/mt.py")
    assert build.definitions_of("s2t") == s2t and build.definitions_of("mt") != mt  # mt's own file
    edit(definitions, "paddle/models/layers.py")  # shared by every model
    assert build.definitions_of("s2t") != s2t


def test_the_flop_cache_recounts_after_a_definition_changes(tmp_path, definitions):
    path = matmul_file(tmp_path / "mm.onnx", 8, 4)
    backend = CallsCounted()
    session = backend.real.load(ModelSpec(path), threads=1)
    feeds = {"x": np.zeros((2, 8), np.float32)}
    DiskFlopCache(backend, tmp_path / "flops").count_flops(session, feeds)
    DiskFlopCache(backend, tmp_path / "flops").count_flops(session, feeds)
    assert backend.calls == 1  # the second count was read from disk
    edit(definitions, "speechperf/zoo/s2t.py")
    DiskFlopCache(backend, tmp_path / "flops").count_flops(session, feeds)
    assert backend.calls == 2


@pytest.mark.slow
def test_bench_rebuilds_a_reference_model_whose_definition_was_edited(tmp_path, definitions):
    """Through the CLI: bench builds the tiny MT model, finds it built on a second run, and builds it again once
    its torch definition changed."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]),
        "DEFINITIONS": os.pathsep.join(str(p) for p in cache.definition_folders()),
        cache.CACHE_ENV: str(tmp_path / "cache"),  # its own cache: the first run builds
    }
    config = tmp_path / "mt.yaml"
    config.write_text("general: {model_type: MT, dataset_size: 1}\nstage1: {model: mt, preset: tiny, max_len_b: 3}\n")
    args = [sys.executable, "-m", "speechperf", "bench", "-b", "onnxruntime", "--config", str(config), "--warmup", "0"]
    args += ["--meters", "runtime"]

    def bench() -> str:
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert "building reference model mt/tiny" in bench()
    assert "building reference model" not in bench()
    manifest = tmp_path / "cache" / "zoo" / "tiny" / "mt" / "manifest.json"
    before = manifest.read_text()
    edit(definitions, "torch/models/mt.py")
    assert "building reference model mt/tiny" in bench()
    assert manifest.read_text() != before and f'"definitions": "{build.definitions_of("mt")}"' in manifest.read_text()
