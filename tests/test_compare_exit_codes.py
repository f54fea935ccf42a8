"""compare exits 1 when a cell's outputs differ from its group's first (a parity mismatch is a failed check, never
success; issue 18), and 0 when they agree. Real frameworks, real model files built here (tiny), the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main


def model_files(folder: Path, torch_scale: float) -> dict[str, Path]:
    """The same network, y = sigmoid(x) * scale, as ONNX (scale 1) and as TorchScript (scale ``torch_scale``)."""
    import torch

    class Gain(torch.nn.Module):
        def __init__(self, scale: float):
            super().__init__()
            self.scale = scale

        def forward(self, feats):
            return torch.sigmoid(feats) * self.scale

    onnx, script = folder / "gain.onnx", folder / f"gain{torch_scale:g}.pt"
    if not onnx.exists():
        torch.onnx.export(
            Gain(1.0), (torch.randn(1, 7, 80),), str(onnx), input_names=["feats"], output_names=["mask"],
            dynamic_axes={"feats": {1: "t"}, "mask": {1: "t"}}, dynamo=False,
        )  # fmt: skip
    torch.jit.script(Gain(torch_scale)).save(str(script))
    return {"onnxruntime": onnx, "torch": script}


def compare(tmp_path: Path, files: dict[str, Path]):
    config = tmp_path / "c.yaml"
    config.write_text(
        "general: {model_type: S2S, generated_seconds: [0.5, 0.5], dataset_size: 1}\n"
        f"stage1: {{path: {{onnxruntime: {files['onnxruntime']}, torch: {files['torch']}}}, "
        "inputs: [{name: feats, source: features}], outputs: [mask], output_kind: mask}\n"
    )
    out = tmp_path / f"{files['torch'].stem}.json"
    done = CliRunner().invoke(
        main,
        ["compare", "--config", str(config), "--backends", "onnxruntime,torch", "--runs", "1", "--warmup", "0",
         "--repeat", "1", "--meters", "runtime", "--executor", "inprocess", "--workdir", str(tmp_path / out.stem),
         "-o", str(out)],
    )  # fmt: skip
    return done, json.loads(out.read_text())


@pytest.mark.slow
def test_a_parity_mismatch_exits_1_and_agreeing_outputs_exit_0(tmp_path):
    done, data = compare(tmp_path, model_files(tmp_path, 2.0))
    assert done.exit_code == 1, done.output
    assert "parity MISMATCH: torch against onnxruntime" in done.output
    assert all(r["ok"] for r in data["runs"])  # every run finished: the mismatch alone fails the check
    assert data["parity"]["torch"]["mismatch"] is True
    done, data = compare(tmp_path, model_files(tmp_path, 1.0))
    assert done.exit_code == 0, done.output
    assert data["parity"]["torch"]["mismatch"] is False
