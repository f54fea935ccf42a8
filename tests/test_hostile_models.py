"""Issue 18, family 6: model files that are not what their name says, through ``speechperf run`` in a fresh process
as a user runs it. A garbage paddle program never crashes the process (it crashed paddle's C++ parser with
SIGSEGV), torch.export logs no traceback before the one-line error, and a folder named like a model file says it is
a folder, on every backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from tests.test_outputs import one_line_error


def run_model(tmp_path: Path, backend: str, model: Path) -> subprocess.CompletedProcess:
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=np.zeros((1, 4), np.float32))
    return subprocess.run(
        [sys.executable, "-m", "speechperf", "run", "-b", backend, "--model", str(model), "--feeds", str(feeds)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def only_line(done: subprocess.CompletedProcess) -> str:
    """The whole of stderr: exactly one line, the error (no traceback, no framework log before it)."""
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr[-3000:]
    return lines[0]


@pytest.mark.slow
def test_a_garbage_paddle_program_is_one_line_not_a_crash(tmp_path):
    garbage = np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    model = tmp_path / "g.pdmodel"
    model.write_bytes(garbage)
    (tmp_path / "g.pdiparams").write_bytes(garbage)
    line = only_line(run_model(tmp_path, "paddle", model))
    assert f"cannot load {model} as a paddle inference model: it is not a paddle program" in line
    empty = tmp_path / "e.pdmodel"  # parses as an empty program: refused here too, in this process (no crash)
    empty.write_bytes(b"")
    (tmp_path / "e.pdiparams").write_bytes(garbage)
    result = CliRunner().invoke(
        main, ["run", "-b", "paddle", "--model", str(empty), "--feeds", str(tmp_path / "feeds.npz")]
    )
    one_line_error(result, "it holds no operators")


@pytest.mark.slow
def test_torch_export_logs_no_traceback_before_the_one_line(tmp_path):
    model = tmp_path / "m.pt2"
    model.write_bytes(b"PK\x03\x04 this is not a zip archive")
    line = only_line(run_model(tmp_path, "torch", model))
    assert f"cannot load {model} as a torch.export program (.pt2)" in line


@pytest.mark.parametrize("backend, name", [("onnxruntime", "x.onnx"), ("torch", "x.pt"), ("paddle", "x.pdmodel")])
def test_a_folder_named_like_a_model_says_it_is_a_folder(backend, name, tmp_path):
    # in this process: nothing here reaches a framework's parser, which is the point
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=np.zeros((1, 4), np.float32))
    folder = tmp_path / name
    folder.mkdir()
    if backend == "paddle":
        (tmp_path / "x.pdiparams").mkdir()
    fifo = tmp_path / f"pipe{Path(name).suffix}"
    os.mkfifo(fifo)  # a framework would block reading it
    for model, words in ((folder, f"model file {folder} is a folder; give the model file itself"), (fifo, "FIFO")):
        result = CliRunner().invoke(main, ["run", "-b", backend, "--model", str(model), "--feeds", str(feeds)])
        one_line_error(result, words)
