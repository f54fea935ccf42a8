"""``speechperf profile --config``: a config's stages profiled through the step profiler, one sample through the
whole pipeline per step, on torch, paddle and onnxruntime; timer_only; one clear line for each kind of bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import speechperf.profiler.workload as workload
from speechperf.cli import main

REPO = Path(__file__).resolve().parents[1]
S2T = str(REPO / "configs" / "S2T.yaml")
# Two samples: the five steps of batch_range=[2,5] cycle over them. Random weights never stop early: 8 tokens.
TINY = ["--config", S2T, "--preset", "tiny", "--dataset-size", "2", "--set", "stage1.max_len_b=8"]
# The tiny S2T's conv subsampler has two Conv1d layers and runs once per sample, in the encoder.
CONVS_PER_SAMPLE = 2
# What each framework calls the model's matrix products and its convolutions.
MATMUL = {"torch": ("aten::linear", "aten::matmul"), "onnxruntime": ("MatMul", "Gemm"), "paddle": ("matmul", "fc")}
CONV = {"torch": "aten::conv1d", "onnxruntime": "Conv", "paddle": "conv2d"}


@pytest.fixture
def summaries(monkeypatch):
    """The ProfileSummary of each profile the CLI runs."""
    seen = []
    original = workload.profile_stages

    def keep(*args, **kwargs):
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(workload, "profile_stages", keep)
    return seen


def profile(*args: str):
    return CliRunner().invoke(main, ["profile", *args])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "paddle", "onnxruntime"])
def test_s2t_preset_records_steps_2_to_4(tmp_path, summaries, backend):
    trace = tmp_path / "s2t trace.json"
    result = profile("-b", backend, *TINY, "--profiler-options", f"batch_range=[2,5]; profile_path={trace}")
    assert result.exit_code == 0, result.output
    (summary,) = summaries
    assert summary.backend == backend and summary.steps == (2, 3, 4)
    assert summary.timing.steps == 3 and summary.timing.ips_unit == "samples/s"
    out = result.output
    assert f"{backend} ops, sorted by total" in out and "steps timed: 3" in out and f"trace: {trace}" in out
    assert "one step = one sample through stage1 s2t/tiny, cycling over 2 sample(s)" in out

    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    step_name = re.compile(r"Profiler?Step#(\d+)")  # paddle writes ProfileStep#N[time], the others ProfilerStep#N
    marked = sorted({int(m.group(1)) for e in events if (m := step_name.match(str(e.get("name"))))})
    assert marked == [2, 3, 4]
    if backend == "onnxruntime":
        # two sessions, each profiled by its own twin, merged on one clock: every step holds the encoder's run and
        # the 8 decoder-step runs, inside the step's span
        steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
        runs = [e for e in events if e["name"] == "model_run"]
        assert [e["args"]["runs"] for e in steps] == [1 + 8] * 3 and len(runs) == 3 * (1 + 8)
        for run in runs:
            assert any(m["ts"] <= run["ts"] and run["ts"] + run["dur"] <= m["ts"] + m["dur"] for m in steps), run

    # Ranked by each op's fastest call times its calls: load from other processes only adds time to a call, so
    # on a busy machine one preempted Split can outweigh the MatMuls by total, never by this.
    names = [op.name for op in sorted(summary.ops, key=lambda op: op.min_ns * op.calls, reverse=True)]
    top = names[:3]
    assert any(word.lower() in name.lower() for name in top for word in MATMUL[backend]), top
    convs = [op for op in summary.ops if CONV[backend].lower() in op.name.lower()]
    assert sum(op.calls for op in convs) == 3 * CONVS_PER_SAMPLE, [(op.name, op.calls) for op in convs]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "onnxruntime"])
def test_timer_only_gives_ips_and_no_trace(tmp_path, summaries, backend):
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    result = profile(
        "-b", backend, *TINY, "--profiler-options", f"batch_range=[1,4]; timer_only=true; profile_path={trace_dir}"
    )
    assert result.exit_code == 0, result.output
    (summary,) = summaries
    assert summary.ops == () and summary.trace_path is None and summary.timing.steps == 3
    assert summary.timing.ips > 0 and "ips:" in result.output and "samples/s" in result.output
    assert "sorted by" not in result.output and not list(trace_dir.iterdir())


@pytest.mark.slow
def test_no_config_profiles_benchs_default_as_the_plugin_template_says(tmp_path, summaries):
    """`speechperf profile -b NAME --preset tiny` (the template's next step): bench's default config, the tiny S2T
    on generated data, not "nothing to profile"."""
    options = f"batch_range=[1,3]; profile_path={tmp_path}/t.json"
    result = profile("-b", "onnxruntime", "--preset", "tiny", "--profiler-options", options)
    assert result.exit_code == 0, result.output
    (summary,) = summaries
    assert summary.steps == (1, 2) and summary.timing.steps == 2
    assert "onnxruntime step by category (2 steps)" in result.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--model", "m.onnx", "--config", S2T], "--model m.onnx and --config"),
        (["--model", "m.onnx", "--preset", "tiny"], "--preset applies to --config"),
        (["--model", "m.onnx", "--set", "stage1.beam=2"], "--set applies to --config"),
        ([*TINY, "--format", "onnx"], "--format applies to --model"),
        ([*TINY, "--input", "x:1x80x30"], "--input applies to --model"),
        (["--config", "missing.yaml"], "config file not found: missing.yaml"),
        ([*TINY, "--profiler-options", "batch_range=[3,1]"], "batch_range='[3,1]' does not end after it starts"),
        (["--config", S2T, "--preset", "huge"], "unknown preset 'huge'; known presets: tiny, base"),
        ([*TINY, "--set", "stage1.max_len=3"], "unknown key stage1.max_len"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message):
    result = profile("-b", "onnxruntime", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_bad_config_file_names_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("general:\n  model_type: S2T\n  datset_size: 2\nstage1:\n  model: s2t\n")
    result = profile("-b", "torch", "--config", str(bad))
    assert result.exit_code == 2
    assert f"{bad}:3: unknown key general.datset_size (did you mean 'dataset_size'?)" in result.output
