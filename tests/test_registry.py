"""The backend registry: entry points, unknown names, missing frameworks, broken plugins."""

import json
import subprocess
import sys

import pytest

from speechperf.backend import Availability, BackendBase, Capabilities
from speechperf.errors import BackendUnavailableError, UnknownBackendError
from speechperf.registry import get_backend, known_backends, register_backend, require_backend, unregister_backend


class MissingFrameworkBackend(BackendBase):
    name = "openvino"
    extra = "openvino"
    capabilities = Capabilities(formats=("ir",))

    def availability(self):
        return Availability(False, f"openvino is not installed; install it with: {self.install_hint()}")


@pytest.fixture
def fake_backends():
    register_backend("openvino", MissingFrameworkBackend)

    def broken():
        raise ImportError("No module named 'tensorrt'")

    register_backend("tensorrt", broken)
    yield
    unregister_backend("openvino")
    unregister_backend("tensorrt")


def test_builtins_are_known():
    assert {"torch", "paddle", "onnxruntime"} <= set(known_backends())


def test_unknown_backend_lists_known_names():
    with pytest.raises(UnknownBackendError) as info:
        get_backend("pytorch")
    message = str(info.value)
    assert "unknown backend 'pytorch'" in message
    assert "onnxruntime, paddle, torch" in message


def test_unknown_backend_suggests_the_nearest_name():
    with pytest.raises(UnknownBackendError, match="did you mean 'paddle'"):
        get_backend("padle")


def test_missing_framework_gives_the_pip_command(fake_backends):
    with pytest.raises(BackendUnavailableError, match=r'pip install "speechperf\[openvino\]"'):
        require_backend("openvino")


def test_broken_plugin_is_reported_and_does_not_hide_the_others(fake_backends):
    from speechperf.registry import backend_table

    rows = {row.name: row for row in backend_table()}
    assert not rows["tensorrt"].available
    assert "tensorrt" in rows["tensorrt"].reason
    assert rows["onnxruntime"].available


@pytest.mark.slow
def test_backends_command_shows_all_three_available():
    result = subprocess.run(
        [sys.executable, "-m", "speechperf", "backends", "--json"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    for name in ("torch", "paddle", "onnxruntime"):
        assert rows[name]["available"], rows[name]["reason"]
        assert rows[name]["version"]
        assert "cpu" in rows[name]["capabilities"]["devices"]
    assert "onnx" in rows["onnxruntime"]["capabilities"]["formats"]


@pytest.mark.slow
def test_backends_table_lists_versions():
    result = subprocess.run(
        [sys.executable, "-m", "speechperf", "backends"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0
    for name in ("torch", "paddle", "onnxruntime"):
        assert name in result.stdout


def test_backends_table_shows_install_hints_with_brackets_whole(fake_backends):
    from click.testing import CliRunner

    from speechperf.cli import main

    result = CliRunner(env={"COLUMNS": "400"}).invoke(main, ["backends"])
    assert result.exit_code == 0, result.output
    # rich reads "[openvino]" as a style tag and drops it unless escaped
    assert 'install it with: pip install "speechperf[openvino]"' in result.output
