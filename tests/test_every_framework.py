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


def mask_config(folder: Path, path: str, extra: str = "", output: str = "mask") -> Path:
    config = folder / "mask.yaml"
    config.write_text(
        "general: {model_type: S2S, dataset_size: 2, generated_seconds: [0.4, 0.7], warmup: 1}\n"
        "stage1:\n"
        f"  path: {path}\n"
        f"  features: {{n_mels: {user_models.BINS}}}\n"
        "  inputs: [{name: feats, source: features}]\n"
        f"  outputs: [{output}]\n  output_kind: mask\n" + extra
    )
    return config


def per_backend(files: dict[str, Path], backends=BACKENDS) -> str:
    return "{" + ", ".join(f"{b}: {files[b]}" for b in backends) + "}"


def compare_three(config: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """`speechperf compare` on the three backends, 2 runs each; its console and its JSON."""
    out = tmp_path / "cmp.json"
    done = speechperf(
        "compare", "--config", str(config), "--backends", ",".join(BACKENDS), "--runs", "2", "--meters", "runtime",
        "--workdir", str(tmp_path / "work"), "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    return done, json.loads(out.read_text())


@pytest.mark.parametrize("kind", ["gru", "conv"])
@pytest.mark.slow
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


@pytest.mark.slow
def test_compare_ranks_three_backends_each_on_its_file_with_float_parity(tmp_path, files):
    config = mask_config(tmp_path, per_backend(files["gru"]))
    done, data = compare_three(config, tmp_path)
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


@pytest.mark.slow
def test_a_backend_without_a_file_is_one_line_before_anything_runs(tmp_path, files):
    config = mask_config(tmp_path, per_backend(files["gru"], ("torch", "onnxruntime")))
    done = speechperf("compare", "--config", str(config), "--runs", "1", "--workdir", str(tmp_path / "work"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: {config}: stage1: path has no file for backend 'paddle'; it has torch, onnxruntime (add "
        "`paddle: FILE` to path)"
    ]
    assert not list((tmp_path / "work").rglob("stderr.txt"))  # no child ran


@pytest.mark.slow
def test_compare_with_onnx_derived_from_torchscript(tmp_path, files):
    """torch runs the TorchScript, paddle its program, onnxruntime the ONNX that torch.onnx.export made from the
    TorchScript (derived once in compare's process, then taken from the cache by its children)."""
    gru = files["gru"]
    config = mask_config(tmp_path, per_backend(gru, ("torch", "paddle")), "  derive: onnx\n")
    done, data = compare_three(config, tmp_path)
    gate = [line for line in done.stderr.splitlines() if line.startswith("stage1: derived ")]
    assert len(gate) == 1 and f"exported from {gru['torch']} by torch.onnx.export" in gate[0]
    assert "parity with torch on 2 sample(s): mask max |Δ|" in gate[0]
    run = json.loads(Path(next(r["json_path"] for r in data["runs"] if r["label"] == "onnxruntime")).read_text())
    derived = Path(run["config"]["stage1"]["path"])
    assert derived.name == "model.onnx" and derived.parent.parent.name == "derived"  # the cached, derived file
    for backend in ("paddle", "onnxruntime"):
        mask = next(d for d in data["parity"][backend]["outputs"] if d["name"] == "outputs.mask")
        assert mask["differing"] == 0 and mask["max_rel"] < 1e-5


@pytest.mark.parametrize("kind", ["gru", "conv"])
@pytest.mark.slow
def test_onnx_derived_from_a_paddle_program_runs_on_onnxruntime(tmp_path, files, kind):
    config = mask_config(tmp_path, f"{{paddle: {files[kind]['paddle']}}}", "  derive: onnx\n")
    (tmp_path / "ref").mkdir()
    reference = mask_config(tmp_path / "ref", f"{{paddle: {files[kind]['paddle']}}}")
    masks = {}
    for backend, cfg in (("paddle", reference), ("onnxruntime", config)):
        saved = tmp_path / f"{backend}.npz"
        done = speechperf(
            "bench", "-b", backend, "--config", str(cfg), "--meters", "runtime", "--save-outputs", str(saved)
        )
        assert done.returncode == 0, done.stderr
        with np.load(saved) as arrays:
            masks[backend] = [arrays[k] for k in sorted(arrays.files) if k.endswith("outputs.mask")]
    assert "by paddle2onnx; parity with paddle on 2 sample(s)" in done.stderr
    assert len(masks["paddle"]) == 2
    for a, b in zip(masks["paddle"], masks["onnxruntime"]):
        np.testing.assert_allclose(b, a, atol=1e-5)


@pytest.mark.slow
def test_a_conversion_that_fails_parity_is_refused_with_the_measured_difference(tmp_path, files):
    """The exporter is handed a TorchScript file with one bias moved by 0.5 (a conversion gone wrong): the gate
    measures the difference, refuses the file, and bench says so in one line (exit 2) from the cached verdict."""
    from speechperf.benchmark import derive
    from speechperf.cache import cache_dir
    from speechperf.config import load_config

    def export_with_another_weight(backend, source, feeds, outputs, axes, out):
        import torch

        module = torch.jit.load(str(source))
        with torch.no_grad():
            module.out.bias.add_(0.5)
        tampered = out.parent / "tampered.pt"
        module.save(str(tampered))
        return backend.export_onnx(tampered, feeds, outputs, axes, out)

    # its own output name: its own cache entry, apart from the other tests' good export of the same file
    config = mask_config(tmp_path, per_backend(files["gru"], ("torch",)), "  derive: onnx\n", output="gain")
    cfg = load_config(config)
    folder = cache_dir() / "derived" / derive.export_key(cfg.stages[0])
    verdict = derive.derive(cfg, 1, folder, export_with_another_weight)
    assert verdict["ok"] is False
    mask = verdict["outputs"]["gain"]
    assert mask["differing"] == 2 and mask["max_abs"] > 0.01 and mask["max_rel"] > 1e-3
    done = speechperf("bench", "-b", "onnxruntime", "--config", str(config), "--meters", "runtime")
    assert done.returncode == 2
    (line,) = [line for line in done.stderr.splitlines() if "refused" in line]
    assert line.startswith(f"Error: {config}: stage1: derive: onnx refused: the ONNX file differs from torch on its")
    assert f"output 'gain' max |Δ| {mask['max_abs']:.2g} rel {mask['max_rel']:.2g}" in line
    assert f"max rel {mask['max_rel']:.2g} > 0.001" in line
    print(line)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("backend", ["onnxruntime", "paddle"])
@pytest.mark.slow
def test_config_check_with_a_backend_refuses_a_feature_size_the_model_does_not_declare(tmp_path, files, backend):
    """80 mels (the default) fed to a model declaring [1, ?, 16]: `config check -b` loads the file, as bench would,
    and says which n_mels fits; the same config with n_mels 16 is ok."""
    config = mask_config(tmp_path, per_backend(files["gru"]))
    config.write_text(config.read_text().replace(f"n_mels: {user_models.BINS}", "n_mels: 80"))
    done = speechperf("config", "check", str(config), "-b", backend)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"Error: {config}: stage1.inputs[0] 'feats' (features) is fed as BTC [1, ?, 80]; the model declares 'feats' "
        f"as [1, ?, {user_models.BINS}]: {user_models.BINS} channels in layout BTC (channels_last), not 80: set "
        f"features.n_mels: {user_models.BINS}"
    )
    good = mask_config(tmp_path, per_backend(files["gru"]))
    assert speechperf("config", "check", str(good), "-b", backend).returncode == 0
