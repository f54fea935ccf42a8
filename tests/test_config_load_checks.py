"""What `config check` and bench both refuse at load, through the same code, with exit 2 and one line (issue 18,
family 3), and a model that returns another number of outputs than declared (never silently truncated).
Real frameworks, real model files built here (tiny), the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main

GENERATED = "general: {model_type: S2S, generated_seconds: [0.5, 0.5], dataset_size: 1}\n"


def speechperf(*args: str):
    """The real CLI, in this process (the frameworks are imported once for the whole file)."""
    return CliRunner().invoke(main, list(args))


def refused_alike(config: Path, backend: str, without_backend: str = "same") -> str:
    """The line `config check -b BACKEND` and bench print for ``config``, checked to be one and the same, exit 2,
    no traceback. ``without_backend``: what `config check` with no backend says: the ``same`` line, one that
    ``differs`` (it has no backend to name), or ``ok`` (it loads no file without a backend, as documented)."""
    bench = ("bench", "-b", backend, "--config", str(config), "--warmup", "0", "--repeat", "1", "--meters", "runtime")
    lines = []
    for args in (("config", "check", "-b", backend, str(config)), bench):
        done = speechperf(*args)
        assert done.exit_code == 2, (args, done.output, done.exception)
        assert done.stderr.strip().count("\n") == 0, done.stderr
        lines.append(done.stderr.strip())
    assert lines[0] == lines[1], lines
    plain = speechperf("config", "check", str(config))
    assert plain.exit_code == (0 if without_backend == "ok" else 2), plain.output
    if without_backend == "same":
        assert plain.stderr.strip() == lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A one-output ONNX file (feats -> mask), a two-output TorchScript file and a two-output paddle program."""
    import torch

    folder = tmp_path_factory.mktemp("models")

    class One(torch.nn.Module):
        def forward(self, feats):
            return torch.sigmoid(feats)

    class Two(torch.nn.Module):
        def forward(self, feats):
            return torch.sigmoid(feats), feats * 2

    torch.onnx.export(
        One(), (torch.randn(1, 7, 80),), str(folder / "one.onnx"), input_names=["feats"], output_names=["mask"],
        dynamic_axes={"feats": {1: "t"}, "mask": {1: "t"}}, dynamo=False,
    )  # fmt: skip
    torch.jit.script(Two()).save(str(folder / "two.pt"))
    return {"onnx": folder / "one.onnx", "torchscript": folder / "two.pt"}


def user_file(tmp_path: Path, path, inputs: str = "feats", outputs: str = "[mask]", extra: str = "") -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(
        GENERATED + f"stage1: {{path: {path}, inputs: [{{name: {inputs}, source: features}}], outputs: {outputs}"
        f"{extra}}}\n"
    )
    return config


def reference(tmp_path: Path, extra: str) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(
        "general: {model_type: S2T, generated_seconds: [0.5, 0.5], dataset_size: 1}\n"
        f"stage1: {{model: s2t, preset: tiny, {extra}}}\n"
    )
    return config


def test_an_input_name_the_onnx_file_does_not_have(tmp_path, models):
    line = refused_alike(user_file(tmp_path, models["onnx"], inputs="nosuch"), "onnxruntime", "ok")
    assert "stage1.inputs: the model has no input 'nosuch'; its inputs: feats" in line


def test_an_output_name_the_onnx_file_does_not_have(tmp_path, models):
    line = refused_alike(user_file(tmp_path, models["onnx"], outputs="[nosuch]"), "onnxruntime", "ok")
    assert "stage1.outputs: the model has no output 'nosuch'; its outputs: mask" in line


def test_fewer_outputs_declared_than_a_torchscript_file_returns(tmp_path, models):
    line = refused_alike(user_file(tmp_path, models["torchscript"], outputs="[wave]"), "torch", "ok")
    assert f"{models['torchscript']}: 1 output(s) declared (wave) but the model returns 2" in line
    assert "guessed from the suffix" not in line  # the file loaded: its format is not the problem


@pytest.mark.slow
def test_fewer_outputs_declared_than_a_paddle_program_returns(tmp_path):
    import paddle

    class Two(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.out = paddle.nn.Linear(80, 80)

        def forward(self, feats):
            return paddle.nn.functional.sigmoid(self.out(feats)), feats * 2

    spec = [paddle.static.InputSpec([1, None, 80], "float32", "feats")]
    paddle.jit.save(paddle.jit.to_static(Two(), input_spec=spec, full_graph=True), str(tmp_path / "two"))
    line = refused_alike(user_file(tmp_path, tmp_path / "two.json", outputs="[wave]"), "paddle", "ok")
    assert f"{tmp_path / 'two.json'}: 1 output(s) declared (wave) but the model returns 2" in line


def test_path_set_to_a_folder(tmp_path):
    line = refused_alike(user_file(tmp_path, tmp_path, extra=", format: onnx"), "onnxruntime")
    assert line.endswith(f"stage1: model file {tmp_path} is a folder; `path` names one model file")


def test_model_dir_that_does_not_exist(tmp_path):
    line = refused_alike(reference(tmp_path, f"model_dir: {tmp_path / 'nosuch'}"), "onnxruntime")
    assert line.endswith(f"model_dir {tmp_path / 'nosuch'} does not exist; give the folder of a built model")


@pytest.mark.parametrize("manifest", [[1, 2], 7, "s2t"])
def test_model_dir_whose_manifest_is_not_an_object(tmp_path, manifest):
    (tmp_path / "built").mkdir()
    (tmp_path / "built" / "manifest.json").write_text(json.dumps(manifest))
    line = refused_alike(reference(tmp_path, f"model_dir: {tmp_path / 'built'}"), "onnxruntime")
    assert f"manifest.json holds a JSON {type(manifest).__name__}, not an object" in line


def test_a_reference_format_that_does_not_exist(tmp_path):
    config = reference(tmp_path, "format: nosuch")
    line = refused_alike(config, "onnxruntime", "differs")
    assert "stage1: format 'nosuch' does not run on backend 'onnxruntime'; allowed: onnx-torch, onnx-paddle" in line
    done = speechperf("config", "check", "-b", "torch", str(config))
    assert done.exit_code == 2 and "format 'nosuch' does not run on backend 'torch'" in done.stderr
