"""Bad input to the CLI: one clear line on stderr, exit code 2, no traceback."""

import subprocess
import sys

import numpy as np
import pytest

from speechperf.testing.conformance import affine_weights

pytest.importorskip("onnx")
from tests.test_conformance_onnxruntime import write_affine_onnx  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    write_affine_onnx(d / "affine.onnx", *affine_weights((8, 4)))
    np.savez(d / "good.npz", x=np.ones((2, 3, 8), np.float32))
    np.savez(d / "wrong_name.npz", feats=np.ones((2, 3, 8), np.float32))
    np.savez(d / "wrong_dtype.npz", x=np.ones((2, 3, 8), np.float64))
    np.savez(d / "wrong_rank.npz", x=np.ones((3, 8), np.float32))
    (d / "junk.onnx").write_bytes(b"not a model")
    return d


def speechperf(*args):
    return subprocess.run([sys.executable, "-m", "speechperf", *args], capture_output=True, text=True, timeout=120)


def test_run_prints_outputs(files):
    result = speechperf("run", "-b", "onnxruntime", "--model", files / "affine.onnx", "--feeds", files / "good.npz")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "y\tfloat32\t[2, 3, 4]"


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["-b", "onnxruntime", "--model", "{d}/missing.onnx", "--feeds", "{d}/good.npz"],
            "model file not found: {d}/missing.onnx",
        ),
        (
            ["-b", "onnxruntime", "--model", "{d}/junk.onnx", "--feeds", "{d}/good.npz"],
            "cannot load {d}/junk.onnx as ONNX",
        ),
        pytest.param(  # the first torch load in the process: over 2 s here
            ["-b", "torch", "--model", "{d}/affine.onnx", "--feeds", "{d}/good.npz"],
            "backend 'torch' loads: torchscript, export, module",
            marks=pytest.mark.slow,
        ),
        (
            ["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/wrong_name.npz"],
            "unknown input 'feats'; this session takes: x",
        ),
        (
            ["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/wrong_dtype.npz"],
            "input 'x' has dtype float64; expected float32",
        ),
        (["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/wrong_rank.npz"], "input 'x' has rank 2"),
        (
            ["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/good.npz", "--threads", "0"],
            "--threads = 0; must be >= 1 and <= the cores this process may use",
        ),
        (
            ["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/good.npz", "--threads", "-2"],
            "--threads = -2; must be >= 1 and <= the cores this process may use",
        ),
        (
            ["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/good.npz", "--device", "tpu"],
            "'tpu' is not one of 'cpu', 'cuda'",
        ),
        (
            ["-b", "onnxruntime", "--model", "{d}/affine.onnx", "--feeds", "{d}/good.npz", "--device", "cuda"],
            "device 'cuda' was requested, but onnxruntime",
        ),
        (["-b", "onnxrt", "--model", "{d}/affine.onnx", "--feeds", "{d}/good.npz"], "unknown backend 'onnxrt'"),
    ],
)
def test_bad_input_is_one_line(files, args, message):
    result = speechperf("run", *[a.format(d=files) for a in args])
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert message.format(d=files) in result.stderr
    assert result.stdout == ""
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1
