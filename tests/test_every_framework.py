"""A user's own model on every framework: a file per backend for one stage, bench running the file of its backend
and compare ranking the three with float parity against the reference backend. Real frameworks and real files,
built here (tests/user_models.py: a GRU and a conv mask network, TorchScript, ONNX from torch, paddle with the
torch weights copied in)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import user_models

BACKENDS = ("torch", "paddle", "onnxruntime")


def speechperf(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "speechperf", *args], capture_output=True, text=True, timeout=600, cwd=cwd, check=False
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """kind -> backend -> file, built in a child process (torch and paddle are not imported into the tests)."""
    folder = tmp_path_factory.mktemp("user_models")
    code = (
        "import sys; from pathlib import Path; from tests import user_models as u\n"
        "f = Path(sys.argv[1])\n"
        "for k in ('gru', 'conv'):\n"
        "    u.save_torchscript(k, f / f'{k}.pt'); u.save_onnx(k, f / f'{k}.onnx'); u.save_paddle(k, f / f'{k}_pd')\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return {
        k: {"torch": folder / f"{k}.pt", "paddle": folder / f"{k}_pd.json", "onnxruntime": folder / f"{k}.onnx"}
        for k in ("gru", "conv")
    }


def mask_config(folder: Path, path: str, extra: str = "") -> Path:
    config = folder / "mask.yaml"
    config.write_text(
        "general: {model_type: S2S, dataset_size: 2, generated_seconds: [0.4, 0.7], warmup: 1}\n"
        "stage1:\n"
        f"  path: {path}\n"
        f"  features: {{n_mels: {user_models.BINS}}}\n"
        "  inputs: [{name: feats, source: features}]\n"
        "  outputs: [mask]\n" + extra
    )
    return config


def per_backend(files: dict[str, Path], backends=BACKENDS) -> str:
    return "{" + ", ".join(f"{b}: {files[b]}" for b in backends) + "}"


@pytest.mark.parametrize("kind", ["gru", "conv"])
def test_bench_runs_the_file_of_its_backend(tmp_path, files, kind):
    config = mask_config(tmp_path, per_backend(files[kind]))
    masks = {}
    for backend in BACKENDS:
        out, saved = tmp_path / f"{backend}.json", tmp_path / f"{backend}.npz"
        done = speechperf(
            "bench", "-b", backend, "--config", str(config), "--meters", "runtime", "-o", str(out),
            "--save-outputs", str(saved),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        data = json.loads(out.read_text())
        assert data["config"]["stage1"]["path"] == str(files[kind][backend])  # the file it ran, recorded
        with np.load(saved) as arrays:
            masks[backend] = {k: arrays[k] for k in arrays.files if k.endswith("outputs.mask")}
    assert len(masks["torch"]) == 2
    for backend in ("paddle", "onnxruntime"):
        for key, mask in masks["torch"].items():
            assert mask.shape == masks[backend][key].shape and mask.shape[-1] == user_models.BINS
            np.testing.assert_allclose(masks[backend][key], mask, atol=1e-5)


def test_compare_ranks_three_backends_each_on_its_file_with_float_parity(tmp_path, files):
    config = mask_config(tmp_path, per_backend(files["gru"]))
    out = tmp_path / "cmp.json"
    done = speechperf(
        "compare", "--config", str(config), "--backends", ",".join(BACKENDS), "--runs", "2", "--meters", "runtime",
        "--workdir", str(tmp_path / "work"), "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    data = json.loads(out.read_text())
    parity = data["parity"]
    assert parity["torch"]["reference"] == "torch"
    for backend in ("paddle", "onnxruntime"):
        mask = next(d for d in parity[backend]["outputs"] if d["name"] == "outputs.mask")
        assert mask["differing"] == 0 and mask["max_abs"] is not None and mask["max_abs"] < 1e-5
        assert mask["max_rel"] < 1e-5 and mask["cosine"] > 0.999999
        assert mask["snr_db"] == "inf" or mask["snr_db"] > 80
    row = next(line for line in done.stdout.splitlines() if line.startswith("│ paddle"))
    assert "outputs.mask max |Δ|" in row and " rel " in row and "SNR" in row  # the parity column's figures
    for backend in BACKENDS:
        runs = [r for r in data["runs"] if r["label"] == backend]
        assert len(runs) == 2 and all(r["ok"] for r in runs)


def test_a_backend_without_a_file_is_one_line_before_anything_runs(tmp_path, files):
    config = mask_config(tmp_path, per_backend(files["gru"], ("torch", "onnxruntime")))
    done = speechperf("compare", "--config", str(config), "--runs", "1", "--workdir", str(tmp_path / "work"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: {config}: stage1: path has no file for backend 'paddle'; it has torch, onnxruntime (add "
        "`paddle: FILE` to path)"
    ]
    assert not (tmp_path / "work").exists()  # no child ran
