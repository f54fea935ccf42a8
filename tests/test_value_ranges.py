"""Every number from a config, an option or a file is range-checked before any work, in one place
(speechperf.values), with the same line from `config check` and bench (issue 18, family 2). Through the real CLI."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from tests.test_outputs import one_line_error

CORES = len(os.sched_getaffinity(0))


def speechperf(*args: str):
    return CliRunner().invoke(main, list(args))


def refused(*args: str) -> str:
    """The error line of a command refused with exit 2 and no traceback: the only line on stderr, or the last
    one after click's usage lines (an option's own type refused it)."""
    done = speechperf(*args)
    assert done.exit_code == 2, (args, done.output, done.exception)
    assert isinstance(done.exception, SystemExit), done.exception
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 or lines[0].startswith("Usage: "), done.stderr
    assert lines[-1].startswith("Error: ") and "Traceback" not in done.stderr, done.stderr
    return lines[-1]


def same_from_check_and_bench(tmp_path, text: str) -> str:
    """`config check FILE` and `bench --config FILE` refuse the config ``text`` with one and the same line."""
    config = tmp_path / "c.yaml"
    config.write_text(text)
    line = refused("config", "check", str(config))
    assert refused("bench", "-b", "onnxruntime", "--config", str(config)) == line
    return line


S2T = "general: {%s}\nstage1: {model: s2t, preset: tiny%s}\n"


def test_threads_beyond_the_usable_cores_are_refused_alike_by_config_check_bench_and_the_options(tmp_path):
    limit = f"must be >= 1 and <= the cores this process may use ({CORES} here)"
    line = same_from_check_and_bench(tmp_path, S2T % ("threads: 9999", ""))
    assert line.endswith(f"general.threads = 9999; {limit}")
    # Every command's --threads is one declaration (speechperf.cli.options), refused by click in the same words.
    option = "Error: --threads = {}; " + limit
    for command in (["bench"], ["optimize"], ["loadgen", "--scenario", "Offline"]):
        assert refused(*command, "-b", "onnxruntime", "--threads", str(CORES + 1)) == option.format(CORES + 1)
    assert refused("compare", "--backends", "onnxruntime", "--threads", "1,9999") == option.format(9999)
    assert refused("check", "--threads", "9999") == option.format(9999)
    # A model file run without a config: the backend's load refuses it, before the framework reads the file.
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read")
    assert refused("profile", "-b", "onnxruntime", "--model", str(model), "--threads", "9999") == (option.format(9999))
    assert "m.onnx" not in line  # never blames the model file


@pytest.mark.parametrize(
    ("general", "stage", "expected"),
    [
        ("seed: 4294967296", "", "general.seed = 4294967296; must be >= 0 and <= 4294967295"),
        ("seed: -5", "", "general.seed = -5; must be >= 0 and <= 4294967295"),
        ("", ", beam: 100000", "stage1.beam = 100000; must be >= 1 and <= 256"),
        ("sample_rate: 100000000", "", "general.sample_rate = 100000000; must be >= 1 and <= 384000"),
        ("target_sr: 0", "", "general.target_sr = 0; must be >= 1 and <= 384000"),
        ("dataset_size: 1000000000000", "", "general.dataset_size = 1000000000000; must be >= 1 and <= 1000000"),
        ("generated_seconds: [1, 1.0e+12]", "", "general.generated_seconds = [1, 1000000000000.0]; must be > 0 and"),
        ("generated_seconds: [1, .inf]", "", "general.generated_seconds = [1, inf] (list); expected a list of finite"),
        ("max_len_a: .nan", "", "stage1.max_len_a = nan (float); expected a finite number"),
        ("repeat: 1000000000", "", "general.repeat = 1000000000; must be >= 1 and <= 10000"),
    ],
)
def test_a_number_out_of_range_is_one_line_from_config_check_and_bench(tmp_path, general, stage, expected):
    assert expected in same_from_check_and_bench(tmp_path, S2T % (general, stage))


def test_input_shapes_a_user_file_asks_for_have_ceilings(tmp_path):
    text = (
        "general: {model_type: S2S}\nstage1: {path: %s, inputs: [{name: x, source: features}], outputs: [y], "
        "features: {num_frames: 1000000000}}\n" % (tmp_path / "m.onnx")
    )
    (tmp_path / "m.onnx").write_bytes(b"never loaded")
    line = same_from_check_and_bench(tmp_path, text)
    assert "stage1.features.num_frames = 1000000000; must be >= 1 and <= 1000000" in line


@pytest.mark.parametrize("value", ["-5", "4294967296"])
def test_data_subset_refuses_a_seed_numpy_cannot_take(tmp_path, value):
    manifest = tmp_path / "in.tsv"
    manifest.write_text(f"{tmp_path}\na.wav\t16000\n")
    line = refused("data", "subset", str(manifest), "-n", "1", "-o", str(tmp_path / "out.tsv"), "--seed", value)
    assert f"'--seed': {value} is not in the range 0<=x<=4294967295" in line
    assert not (tmp_path / "out.tsv").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
@pytest.mark.parametrize(
    "args", [["compare", "--backends", "onnxruntime"], ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic"]]
)
def test_a_timeout_no_timer_can_wait_is_refused_before_any_child(args, value):
    line = refused(*args, "--timeout", value)
    assert "'--timeout'" in line and ("not a finite number" in line or "is not in the range" in line)


def test_empty_backends_are_refused_instead_of_running_every_backend(tmp_path):
    line = refused("compare", "--backends", "", "--workdir", str(tmp_path / "w"))
    assert line == "Error: --backends = '': an empty item; expected a comma-separated list such as a,b"
    assert not (tmp_path / "w").exists()


def test_an_empty_meter_is_refused_alike_by_bench_and_compare(tmp_path):
    expected = "general.meters = 'runtime,,memory': an empty item; expected a comma-separated list such as a,b"
    assert refused("bench", "-b", "onnxruntime", "--meters", "runtime,,memory").endswith(expected)
    assert refused("compare", "--backends", "onnxruntime", "--meters", "runtime,,memory").endswith(expected)
    assert refused("check", "--meters", "runtime,,memory").endswith(
        "--meters = 'runtime,,memory': an empty item; expected a comma-separated list such as a,b"
    )


HUGE = "1000000000000"


@pytest.mark.parametrize(
    "args, allowed",
    [
        (
            ["compare", "--backends", "onnxruntime", "--runs", HUGE],
            "'--runs': 1000000000000 is not in the range 1<=x<=10000",
        ),
        (["compare", "--backends", "onnxruntime", "--best-runs", HUGE], "'--best-runs'"),
        (
            ["compare", "--backends", "onnxruntime", "--jobs", HUGE],
            "'--jobs': 1000000000000 is not in the range 1<=x<=256",
        ),
        (["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--runs", HUGE], "'--runs'"),
        (
            ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--calibration-size", HUGE],
            "'--calibration-size': 1000000000000 is not in the range 1<=x<=1000000",
        ),
    ],
)
def test_a_count_of_runs_jobs_or_samples_past_its_ceiling_is_refused_before_any_child(args, allowed, tmp_path):
    one_line_error(
        speechperf(*args, "--workdir" if args[0] == "compare" else "--out-dir", str(tmp_path / "w")), allowed
    )
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("value", ["1e400", "inf", "nan", "10001%", "-1%"])
def test_diff_refuses_a_fail_above_that_is_not_a_finite_percentage_up_to_10000(value, tmp_path):
    line = one_line_error(speechperf("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-above", value))
    assert f"--fail-above {value!r}: must be a finite percentage from 0% to 10000% (100)" in line


def test_profile_refuses_an_input_shape_too_large_to_allocate_and_a_batch_range_of_hours(tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"never loaded")
    profile = ["profile", "-b", "onnxruntime", "--model", str(model)]
    line = one_line_error(speechperf(*profile, "--input", "mel:100000x100000x100000"))
    assert "--input 'mel:100000x100000x100000': 1e+15 elements; at most 268,435,456" in line
    line = one_line_error(
        speechperf(*profile, "--input", "mel:1x4x4", "--profiler-options", "batch_range=[1,10000000000000]")
    )
    assert "batch_range=[1, 10000000000000] is not allowed" in line and "end <= 100000" in line


def test_an_empty_quantization_method_is_refused(tmp_path):
    line = one_line_error(speechperf("optimize", "-b", "onnxruntime", "--method", "ort-dynamic,,"))
    assert line == "Error: --method = 'ort-dynamic,,': an empty item; expected a comma-separated list such as a,b"
