"""Float options refuse nan and inf (they pass every comparison click's FloatRange makes), and `plugin new --dir`
refuses a path that is not a folder: one line, exit 2, nothing written."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from tests.test_outputs import one_line_error


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
    one_line_error(result, f"--dir {fifo} is a FIFO; a folder (or a new path) is needed")
    assert fifo.is_fifo()


def test_plugin_new_refuses_a_folder_under_a_file_a_name_too_long_and_a_plugin_name_too_long(tmp_path):
    (tmp_path / "file").write_text("x")
    new = ["plugin", "new", "mybackend", "--dir"]
    one_line_error(CliRunner().invoke(main, [*new, str(tmp_path / "file" / "d")]), "--dir", "is a file, not a folder")
    long_dir = str(tmp_path / ("d" * 5000))
    one_line_error(CliRunner().invoke(main, [*new, long_dir]), "--dir", "this file system allows")
    line = one_line_error(CliRunner().invoke(main, ["plugin", "new", "a" * 300, "--dir", str(tmp_path)]))
    assert "plugin name" in line and "is 300 characters; at most 64" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
