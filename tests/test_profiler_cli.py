"""``speechperf profile``: a model file profiled through the same step profiler, on random inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main

pytest.importorskip("onnxruntime")
from tests.test_profiler_onnxruntime import tiny_onnx  # noqa: E402,F401  (the fixture)


def test_profile_an_onnx_model(tmp_path, tiny_onnx):  # noqa: F811
    trace = tmp_path / "cli trace.json"
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--backend",
            "onnxruntime",
            "--model",
            str(tiny_onnx),
            "--input",
            "x:2x80x30",
            "--profiler-options",
            f"batch_range=[2,5]; sorted_key=calls; profile_path={trace}",
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "onnxruntime ops, sorted by calls (ms)" in out and "FusedConv" in out
    assert "steps timed: 3" in out and "samples/s" in out
    assert f"trace: {trace} (open it in Perfetto" in out
    events = json.load(open(trace))["traceEvents"]
    assert sum(e["name"] == "model_run" for e in events) == 3
    # the category table: the conv is its own row, and the rows add up to the step
    assert "onnxruntime step by category (3 steps)" in out
    conv = next(line for line in out.splitlines() if line.startswith("│ conv "))
    assert float(conv.split("│")[2]) > 0


def test_timer_only(tmp_path, tiny_onnx):  # noqa: F811
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "-b",
            "onnxruntime",
            "--model",
            str(tiny_onnx),
            "--input",
            "x:2x80x30",
            "--profiler-options",
            f"batch_range=[1,4]; timer_only=true; profile_path={tmp_path}/t.json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ips:" in result.output and "FusedConv" not in result.output and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "args,message",
    [
        (["--profiler-options", "batch_range=[3,1]"], "batch_range='[3,1]' does not end after it starts"),
        ([], "input 'x' has no fixed shape (?x80x?); give it with --input x:SHAPE"),
        (["--input", "x:2by80"], "--input 'x:2by80' is not NAME:SHAPE[:DTYPE]"),
        (["--input", "y:2x80x30"], "--input 'y': the model has no such input; its inputs: x"),
        (
            ["--input", "x:2x80x30", "--seed", "-5"],
            "Invalid value for '--seed': -5 is not in the range 0<=x<=4294967295",
        ),
        (
            ["--input", "x:2x80x30", "--profiler-options", "profile_path=/proc/t.json"],
            "profile_path /proc/t.json: its folder /proc is not writable",
        ),
        # speechperf's own CLI parses strictly: what the drop-ins warn about is refused here
        (["--input", "x:2x80x30", "--profiler-options", "foo=1"], "unknown profiler option 'foo'"),
        (["--input", "x:2x80x30", "--profiler-options", "batch_range=[20,10]"], "does not end after it starts"),
        (
            ["--input", "x:2x80x30", "--profiler-options", "api=legacy"],
            "api=legacy is a paddle option; onnxruntime has one profiler, its session profiling",
        ),
        (
            ["--input", "x:2x80x30", "--profiler-options", "tracer_option=OpDetail"],
            "tracer_option=OpDetail has no onnxruntime equivalent",
        ),
        (
            ["--input", "x:2x80x30", "--profiler-options", "profile_path=/dev/full"],
            "profile_path /dev/full is a character device; only a regular file (or a new path) is written",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(tiny_onnx, args, message):  # noqa: F811
    result = CliRunner().invoke(main, ["profile", "-b", "onnxruntime", "--model", str(tiny_onnx), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


S2T_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "S2T.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("batch_range,steps", [("[0,2]", {0, 1}), ("[1,3]", {1, 2})])
def test_a_range_from_step_0_or_1_records_the_same_steps_on_every_backend(tmp_path, batch_range, steps):
    """The range may start before the loop has attached its sessions (ORT profiles a session, not the process)."""
    import re

    recorded = {}
    for backend in ("torch", "paddle", "onnxruntime"):
        pytest.importorskip({"torch": "torch", "paddle": "paddle", "onnxruntime": "onnxruntime"}[backend])
        trace = tmp_path / f"{backend}.json"
        result = CliRunner().invoke(
            main,
            [
                "profile",
                "-b",
                backend,
                "--config",
                str(S2T_CONFIG),
                "--preset",
                "tiny",
                "--dataset-size",
                "2",
                "--profiler-options",
                f"batch_range={batch_range}; profile_path={trace}",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "steps timed: 2" in result.output
        events = json.loads(trace.read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        # ProfilerStep#N (torch, onnxruntime), ProfileStep#N[... ms] (paddle)
        recorded[backend] = {
            int(m.group(1)) for e in events if (m := re.match(r"Profiler?Step#(\d+)", str(e.get("name", ""))))
        }
    assert recorded == {"torch": steps, "paddle": steps, "onnxruntime": steps}


def test_the_input_hint_is_built_from_the_declared_shape(tmp_path):
    """A speech-enhancement file declaring [1, frames, 161]: the hint's example shape is one it takes."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("spec", TensorProto.FLOAT, [1, "frames", 161])
    y = helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, "frames", 161])
    graph = helper.make_graph([helper.make_node("Sigmoid", ["spec"], ["mask"])], "g", [x], [y])
    path = tmp_path / "enhance.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    result = CliRunner().invoke(main, ["profile", "-b", "onnxruntime", "--model", str(path)])
    assert result.exit_code == 2
    hint = "e.g. --input spec:1x100x161"
    assert hint in result.output
    again = CliRunner().invoke(
        main, ["profile", "-b", "onnxruntime", "--model", str(path), "--input", "spec:1x100x161"]
    )
    assert again.exit_code == 0, again.output


def test_an_input_of_the_wrong_rank_is_one_line_before_any_progress_line(tmp_path, tiny_onnx):  # noqa: F811
    result = CliRunner().invoke(
        main,
        ["profile", "-b", "onnxruntime", "--model", str(tiny_onnx), "--input", "x:2x80"]
        + ["--profiler-options", f"batch_range=[1,3]; profile_path={tmp_path}/t.json"],
    )
    assert result.exit_code == 2
    assert result.output.splitlines() == ["Error: input 'x' has rank 2 (shape (2, 80)); expected rank 3 (B, 80, T)"]
    assert not (tmp_path / "t.json").exists()
