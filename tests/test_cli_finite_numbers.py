"""Float options refuse nan and inf (they pass every comparison click's FloatRange makes), and `plugin new --dir`
refuses a path that is not a folder: one line, exit 2, nothing written."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from speechperf.cli import main


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize(
    "args",
    [
        ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--max-wer-increase"],
        ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--max-bleu-drop"],
        ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--min-agreement"],
        ["compare", "--timeout"],
    ],
)
def test_a_float_option_refuses_what_is_not_a_finite_number(args, value):
    result = CliRunner().invoke(main, [*args, value])
    assert result.exit_code == 2
    assert "not a finite number" in result.output or "not in the range" in result.output
    assert "Traceback" not in result.output


def test_plugin_new_refuses_a_fifo_as_its_folder(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    result = CliRunner().invoke(main, ["plugin", "new", "x", "--dir", str(fifo)])
    assert result.exit_code == 2
    assert f"--dir {fifo} is not a folder" in result.output
    assert "Traceback" not in result.output
    assert fifo.is_fifo()
