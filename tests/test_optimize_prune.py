"""Pruning in ``speechperf optimize`` (speechperf.optimize.pruning, speechperf.zoo.pruned, backends/torch/prune.py):
the tiny reference S2T pruned by torch, its other formats built from the pruned weights, the sparsity and the sizes
measured from the files, and the study as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.optimize.pruning import compressed_size, measure_sparsity
from speechperf.zoo.build import ensure_built, load_session, read_manifest
from speechperf.zoo.catalog import get_model
from speechperf.zoo.pruned import build_pruned

pytest.importorskip("torch")

#: the tiny S2T's FFN width (speechperf.zoo.s2t)
FFN = 128


@pytest.fixture(scope="module")
def fp32() -> Path:
    return ensure_built("s2t", "tiny")


@pytest.fixture(scope="module")
def pruned(fp32, tmp_path_factory):
    """Each method at 0.3, the torch eager format only (the weights): a second each."""
    out = tmp_path_factory.mktemp("pruned")
    return {
        method: out / method
        for method in ("prune-l1-global", "prune-l1-layer", "prune-ffn-l2")
        if build_pruned(fp32, method, 0.3, out / method, ["torch-eager"])
    }


def weights(folder: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(folder / "weights.safetensors"))


def test_unstructured_pruning_reaches_the_sparsity_asked_globally_and_in_every_layer(fp32, pruned):
    for method in ("prune-l1-global", "prune-l1-layer"):
        targets = read_manifest(pruned[method])["pruning"]["targets"]
        assert "encoder_layers.0.self_attn.q_proj.weight" in targets  # attention projections are pruned
        assert not any("embed" in name or "norm" in name for name in targets)
        found = measure_sparsity(fp32 / "weights.safetensors", pruned[method] / "weights.safetensors", targets)
        assert found.layers == pytest.approx(0.3, abs=0.002), method
        assert 0.1 < found.model < found.layers  # embeddings, norms and biases keep every weight
    layer_wise = weights(pruned["prune-l1-layer"])
    for name in read_manifest(pruned["prune-l1-layer"])["pruning"]["targets"]:
        share = 1 - np.count_nonzero(layer_wise[name]) / layer_wise[name].size
        assert share == pytest.approx(0.3, abs=0.5 / layer_wise[name].size + 1e-9), name
    # global: one threshold over every layer, so the layers lose different shares
    global_wise = weights(pruned["prune-l1-global"])
    shares = {1 - np.count_nonzero(global_wise[n]) / global_wise[n].size for n in targets}
    assert max(shares) - min(shares) > 0.05


def test_the_zeros_shrink_the_compressed_size_not_the_dense_one(fp32, pruned):
    dense, sparse = fp32 / "weights.safetensors", pruned["prune-l1-global"] / "weights.safetensors"
    assert abs(sparse.stat().st_size - dense.stat().st_size) < 1024  # same tensors, same shapes
    assert compressed_size([sparse]) < 0.9 * compressed_size([dense])
    assert compressed_size([sparse]) < sparse.stat().st_size


def test_structured_pruning_rebuilds_smaller_ffn_layers_that_compute_the_masked_model(fp32, pruned):
    import torch

    folder = pruned["prune-ffn-l2"]
    kept = FFN - round(0.3 * FFN)
    assert read_manifest(folder)["pruning"]["architecture"] == {"ffn": kept}
    small = weights(folder)
    assert small["encoder_layers.0.fc1.weight"].shape == (kept, 64)
    assert small["encoder_layers.0.fc2.weight"].shape == (64, kept)
    # 4 FFN pairs (2 encoder, 2 decoder layers), each losing its dropped neurons' fc1 rows, biases and fc2 columns
    removed = 4 * (2 * 64 + 1) * (FFN - kept) * 4
    shrunk = (fp32 / "weights.safetensors").stat().st_size - folder.joinpath("weights.safetensors").stat().st_size
    assert shrunk == pytest.approx(removed, abs=256)  # the safetensors header's text changes a little too
    # The smaller model is the fp32 one with the removed neurons silenced (their fc1 row and bias zeroed): the
    # neurons of least L2 norm of each layer's fc1 rows.
    full = weights(fp32)
    for name in [k for k in full if k.endswith("fc1.weight")]:
        norms = np.linalg.norm(full[name], axis=1)
        dropped = np.argsort(norms, kind="stable")[: FFN - kept]
        full[name][dropped] = 0
        full[name.replace("weight", "bias")][dropped] = 0
    feeds = get_model("s2t").example_feeds("encoder", "tiny", 2, 40, np.random.default_rng(0))
    rebuilt = load_session(folder, "encoder", "torch-eager")(feeds)
    from speechperf.backends.torch.models import build, parent_of

    components = build("s2t", get_model("s2t").hparams("tiny"))
    parent_of(components).load_state_dict({k: torch.from_numpy(v) for k, v in full.items()})
    with torch.inference_mode():
        masked = components["encoder"].eval()(*(torch.from_numpy(feeds[n]) for n in feeds))
    np.testing.assert_allclose(rebuilt["encoder_out"], masked[0].numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_paddle_runs_the_same_pruned_weights_as_torch(fp32, tmp_path):
    """paddle's twin of the network built from the pruned weights, with the smaller FFN too: the same outputs."""
    pytest.importorskip("paddle")
    for method in ("prune-l1-global", "prune-ffn-l1"):
        folder = tmp_path / method
        build_pruned(fp32, method, 0.5, folder, ["paddle-inference"])
        for component, length in (("encoder", 40), ("decoder_step", 5)):
            feeds = get_model("s2t").example_feeds(component, "tiny", 2, length, np.random.default_rng(1))
            torch_out = load_session(folder, component, "torch-eager")(feeds)
            paddle_out = load_session(folder, component, "paddle-inference")(feeds)
            for name, value in torch_out.items():
                np.testing.assert_allclose(paddle_out[name], value, rtol=1e-4, atol=1e-4, err_msg=f"{method} {name}")


@pytest.mark.parametrize("value", ["1.5", "abc", "0", "0.3,0.3"])
def test_a_bad_sparsity_is_one_line_and_exit_2(tmp_path, value):
    result = CliRunner().invoke(
        main,
        ["optimize", "-b", "onnxruntime", "--method", "prune-l1-global", "--sparsity", value],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: --sparsity {value!r}"), result.output


def test_sparsity_without_a_pruning_method_and_an_unknown_one_are_refused(tmp_path):
    for args, said in (
        (["--method", "ort-dynamic", "--sparsity", "0.3"], "--sparsity is for pruning methods"),
        (["--method", "prune-l0"], "unknown pruning method 'prune-l0' for backend 'onnxruntime'"),
        (["--method", "prune-l1-global+int4"], "unknown quantization method 'int4'"),
    ):
        result = CliRunner().invoke(
            main, ["optimize", "-b", "onnxruntime", "--preset", "tiny", "--out-dir", str(tmp_path / "o"), *args]
        )
        assert result.exit_code == 2 and said in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not any((tmp_path / "o").iterdir())  # nothing was pruned


@pytest.mark.slow
def test_a_sparsity_sweep_on_onnxruntime_and_prune_then_quantize(tmp_path):
    """The study as a user runs it: each level a row with its sparsity, its dense and compressed size, the ONNX
    export of the pruned model checked against torch's eager run of the same weights; structured pruning shrinks
    the dense file as well; prune + ort-dynamic quantizes the pruned model."""
    out = tmp_path / "o.json"
    result = CliRunner().invoke(
        main,
        [
            "optimize", "-b", "onnxruntime", "--preset", "tiny", "--dataset-size", "3", "--calibration-size", "2",
            "--set", "general.repeat=1", "--set", "general.warmup=1", "--runs", "1", "--no-store",
            "--method", "prune-l1-global,prune-ffn-l1,prune-ffn-l1+ort-dynamic", "--sparsity", "0.2,0.5",
            "--out-dir", str(tmp_path / "v"), "-o", str(out), "--plot", str(tmp_path / "t.png"),
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {r["variant"]: r for r in json.loads(out.read_text())["rows"]}
    fp32 = rows["fp32"]
    assert fp32["compressed_mb"] < fp32["size_mb"] and fp32["sparsity"] is None
    for level in (0.2, 0.5):
        unstructured = rows[f"prune-l1-global@{level:g}"]
        assert unstructured["sparsity"] == pytest.approx(level, abs=0.002)
        assert unstructured["size_ratio"] == pytest.approx(1.0, abs=0.01)  # dense zeros
        assert unstructured["compressed_mb"] < fp32["compressed_mb"]
        assert unstructured["parity_max_rel_diff"] < 1e-4
        assert unstructured["mean_ms"] > 0 and unstructured["fidelity"]
        structured = rows[f"prune-ffn-l1@{level:g}"]
        assert structured["sparsity"] == pytest.approx(round(level * FFN) / FFN, abs=1e-3)
        assert structured["size_ratio"] < 1.0 and structured["parity_max_rel_diff"] < 1e-4
        both = rows[f"prune-ffn-l1@{level:g}+ort-dynamic"]
        assert both["size_ratio"] < structured["size_ratio"] and both["sparsity"] == structured["sparsity"]
    assert rows["prune-l1-global@0.5"]["compressed_mb"] < rows["prune-l1-global@0.2"]["compressed_mb"]
    assert (tmp_path / "t.png").stat().st_size > 0


def sweep_rows():
    def row(variant, speedup, size, zipped, wer, sparsity=None):
        return {
            "variant": variant,
            "status": "ok",
            "speedup": speedup,
            "speedup_sigma": 0.05,
            "size_ratio": size,
            "compressed_ratio": zipped,
            "wer": wer,
            "sparsity": sparsity,
        }

    return [
        row("fp32", None, 1.0, 1.0, 0.05),
        row("prune-l1-global@0.5", 1.0, 1.0, 0.6, 0.20, 0.5),  # listed before the lower level on purpose
        row("prune-l1-global@0.1", 1.0, 1.0, 0.9, 0.05, 0.1),
        row("prune-ffn-l2@0.3+ort-dynamic", 1.9, 0.3, 0.25, 0.06, 0.2995),
        row("ort-dynamic", 1.6, 0.8, 0.75, 0.05),
    ]


def test_the_plot_draws_each_sparsity_sweep_in_order_and_a_compressed_size_panel():
    pytest.importorskip("matplotlib")
    from speechperf.views.optimize_plot import SWEEP_GID, sweeps, tradeoff_figure

    found = sweeps(sweep_rows())
    assert list(found) == ["prune-l1-global"]  # one level alone is no sweep
    assert [r["variant"] for r in found["prune-l1-global"]] == ["prune-l1-global@0.1", "prune-l1-global@0.5"]
    fig = tradeoff_figure(sweep_rows(), {"max_wer_increase": 1.0}, "t")
    speed, size, zipped = fig.axes[:3]
    assert zipped.get_xlabel() == "compressed (zip) size / fp32's"
    (line,) = [x for x in zipped.lines if (x.get_gid() or "").startswith(SWEEP_GID)]
    assert line.get_gid() == f"{SWEEP_GID}:prune-l1-global"
    assert [tuple(p) for p in line.get_xydata()] == [(0.9, 5.0), (0.6, 20.0)]  # WER in %, by sparsity
    (line,) = [x for x in speed.lines if (x.get_gid() or "").startswith(SWEEP_GID)]
    assert [tuple(p) for p in line.get_xydata()] == [(1.0, 5.0), (1.0, 20.0)]


def test_the_table_shows_the_sparsity_and_the_zipped_size_of_each_row():
    from speechperf.results import Document
    from speechperf.views.optimize import markdown

    rows = [
        {"variant": "fp32", "status": "baseline", "size_mb": 151.41, "size_ratio": 1.0, "compressed_mb": 139.2,
         "compressed_ratio": 1.0},
        {"variant": "prune-l1-global@0.3", "status": "ok", "size_mb": 151.41, "size_ratio": 1.0,
         "compressed_mb": 110.5, "compressed_ratio": 0.794, "sparsity": 0.3, "model_sparsity": 0.153,
         "graph_max_rel_diff": 0.12, "parity_max_rel_diff": 3.1e-07},
    ]  # fmt: skip
    lines = markdown(Document(kind="optimize", rows=rows)).splitlines()
    header = [c.strip() for c in lines[0].split("|")]
    fp32, pruned = ([c.strip() for c in line.split("|")] for line in lines[2:4])
    column = header.index
    assert (fp32[column("zip MB (x fp32)")], fp32[column("sparsity (whole model)")]) == ("139.20 (1.00x)", "-")
    assert pruned[column("zip MB (x fp32)")] == "110.50 (0.79x)"
    assert pruned[column("sparsity (whole model)")] == "30.0% (15.3%)"
    assert pruned[column("graph max rel diff")] == "0.12; parity 3.1e-07"
