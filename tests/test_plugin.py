"""A real out-of-tree backend plugin, laid out as CONTRIBUTING.md says, driven through the real CLI.

The plugin (``ortwrap``: onnxruntime under another name) is written to a temporary folder as a package
``ortwrap/backend.py`` + ``ortwrap/known.py`` + ``ortwrap/memory.py`` and a ``*.dist-info`` whose
``entry_points.txt`` registers it in the ``speechperf.backends`` group; the folder is put on PYTHONPATH of
``speechperf`` subprocesses. It has no ``flops.py`` and no ``profiler.py``: those capabilities must say they are
unavailable, and everything else (``check --meters threads``, the VAD and S2T presets) must work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SPEECHPERF = [sys.executable, "-m", "speechperf"]

BACKEND = '''
"""An out-of-tree speechperf backend: ONNX Runtime under the name ortwrap."""

import attrs

from speechperf.backend import BackendBase, Capabilities, Session, TensorInfo, check_threads
from speechperf.config.schema import key
from speechperf.errors import ModelFileError

DTYPES = {"tensor(float)": "float32", "tensor(int64)": "int64"}


@attrs.frozen
class OrtWrapOptions:
    graph_optimization_level: str = key("all", "graph optimisations", "str", ("disable", "basic", "all"))


class WrapSession(Session):
    backend = "ortwrap"

    def __init__(self, session):
        self.session = session
        self.inputs = tuple(TensorInfo(a.name, DTYPES.get(a.type)) for a in session.get_inputs())
        self.outputs = tuple(TensorInfo(a.name) for a in session.get_outputs())

    def run(self, feeds):
        names = self.output_names
        return dict(zip(names, self.session.run(names, dict(feeds))))


def make_session(model, threads, level="all"):
    import onnxruntime as ort

    levels = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[level]
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return WrapSession(ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]))


class OrtWrapBackend(BackendBase):
    name = "ortwrap"
    framework_module = "onnxruntime"
    framework_package = "onnxruntime"
    capabilities = Capabilities(devices=("cpu",), formats=("onnx",))
    suffix_formats = {".onnx": "onnx"}
    options_class = OrtWrapOptions

    def __init__(self):
        self._threads = 1

    def _load(self, spec, fmt, device):
        path = spec.existing(spec.path)
        try:
            return make_session(str(path), self._threads, spec.options.get("graph_optimization_level", "all"))
        except Exception as exc:
            raise ModelFileError(f"cannot load {path} as ONNX: {exc}") from None

    def set_threads(self, n):
        self._threads = check_threads(n)

    def get_threads(self):
        return self._threads

    def seed(self, n):
        pass

    def synchronize(self, device="cpu"):
        pass


class OrtWrapGpu(OrtWrapBackend):
    """Its framework is not installed; it says how to install it."""

    name = "ortwrap-gpu"
    framework_module = "ortwrap_gpu_runtime"
    framework_package = "ortwrap-gpu-runtime"
    install_command = 'pip install "ortwrap[gpu]"'


class OrtWrapNoHint(OrtWrapGpu):
    """No install_command: the hint is the distribution that registered it."""

    name = "ortwrap-nohint"
    install_command = None
'''

KNOWN = '''
"""KnownGraph sessions for `speechperf check` (thread pinning), as a one-node ONNX graph."""

from ortwrap.backend import make_session


def known_session(graph, threads=None):
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("MatMul" if graph.kind == "matmul" else "Conv", ["x", "w"], ["y"])
    model = helper.make_model(
        helper.make_graph([node], "known", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(graph.weight(), "w")]),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return make_session(model.SerializeToString(), threads or 1)
'''

MEMORY = """
class DeviceMemory:
    def __init__(self, device="cpu"):
        self.available = False
        self.reason = "ortwrap exposes no device allocator"
"""

ENTRY_POINTS = """
[speechperf.backends]
ortwrap = ortwrap.backend:OrtWrapBackend
ortwrap-gpu = ortwrap.backend:OrtWrapGpu
ortwrap-nohint = ortwrap.backend:OrtWrapNoHint
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("site")
    package = root / "ortwrap"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in (("backend", BACKEND), ("known", KNOWN), ("memory", MEMORY)):
        (package / f"{name}.py").write_text(textwrap.dedent(text))
    dist = root / "ortwrap_speechperf-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ortwrap-speechperf\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def speechperf(plugin_path: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }
    return subprocess.run([*SPEECHPERF, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


@pytest.mark.slow
def test_backends_lists_the_plugin_with_its_capabilities_and_install_hints(plugin_path):
    result = speechperf(plugin_path, "backends", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["ortwrap"]["available"], rows["ortwrap"]["reason"]
    # found beside ortwrap/backend.py, in the plugin's package; flops.py and profiler.py are not there
    assert rows["ortwrap"]["optional"] == ["known_graph", "memory"]
    assert set(rows["torch"]["optional"]) == {"profiler", "flops", "known_graph", "memory", "quantize"}
    assert not rows["ortwrap-gpu"]["available"]
    assert rows["ortwrap-gpu"]["reason"].endswith('install it with: pip install "ortwrap[gpu]"')
    assert rows["ortwrap-nohint"]["reason"].endswith("install it with: pip install ortwrap-speechperf")

    table = speechperf(plugin_path, "backends")
    assert table.returncode == 0, table.stderr
    text = " ".join(line.strip("│ ") for line in table.stdout.splitlines())
    # rich would read "[gpu]" as markup and drop it; the table must show the command whole
    assert '"ortwrap[gpu]"' in "".join(table.stdout.split()).replace("│", "")
    assert "ortwrap" in text


@pytest.mark.slow
def test_check_threads_needs_no_flops_module_and_flops_says_unavailable(plugin_path):
    result = speechperf(plugin_path, "check", "--meters", "threads", "--backend", "ortwrap", "--quick")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ortwrap: pinned to 1 thread" in result.stdout and "pass" in result.stdout

    flops = speechperf(plugin_path, "check", "--meters", "flops", "--backend", "ortwrap")
    line = next(line for line in flops.stdout.splitlines() if line.split()[:3] == ["flops", "ortwrap:", "matmul"])
    assert line.split()[-1] == "unavailable"
    assert "backend 'ortwrap': capability 'flops' is unavailable" in flops.stdout


def test_profile_without_profiler_module_is_one_line(plugin_path):
    from speechperf.registry import register_backend, unregister_backend

    sys.path.insert(0, str(plugin_path))
    try:
        from ortwrap.backend import OrtWrapBackend

        register_backend("ortwrap", OrtWrapBackend)
        from speechperf.backend import CapabilityUnavailableError
        from speechperf.registry import get_backend

        backend = get_backend("ortwrap")
        with pytest.raises(CapabilityUnavailableError) as info:
            backend.step_profiler("batch_range=[1,2]")
        assert str(info.value) == "backend 'ortwrap': capability 'profiler' is unavailable (no module ortwrap.profiler)"
        assert backend.capability("memory").DeviceMemory().reason == "ortwrap exposes no device allocator"

        class Elsewhere(OrtWrapBackend):  # defined here, in the test module: its package holds no capability modules
            name = "elsewhere"
            capability_modules = {"known_graph": "ortwrap.known", "profiler": "ortwrap.memory"}

        elsewhere = Elsewhere()
        assert elsewhere.has_capability("known_graph") and not elsewhere.has_capability("memory")
        graph = __import__("speechperf.meters.flops", fromlist=["KnownGraph"]).KnownGraph("matmul")
        session = elsewhere.known_session(graph, 1)
        np.testing.assert_allclose(session(graph.feeds())["y"], graph.reference(graph.feeds()), rtol=1e-4)
        with pytest.raises(
            CapabilityUnavailableError,
            match=r"^backend 'elsewhere': capability 'profiler' is "
            r"unavailable \(ortwrap.memory defines no make_step_profiler\)$",
        ):
            elsewhere.step_profiler("")
    finally:
        unregister_backend("ortwrap")
        sys.path.remove(str(plugin_path))
        for name in [m for m in sys.modules if m == "ortwrap" or m.startswith("ortwrap.")]:
            del sys.modules[name]


@pytest.mark.slow
def test_vad_preset_runs_the_silero_onnx_on_the_plugin(plugin_path, tmp_path):
    out = tmp_path / "vad.json"
    result = speechperf(
        plugin_path,
        "bench",
        "--backend",
        "ortwrap",
        "--config",
        str(REPO / "configs" / "VAD.yaml"),
        "--dataset-size",
        "2",
        "--warmup",
        "1",
        "--repeat",
        "1",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    stage = data["result"]["stages"][0]
    assert data["result"]["backend"] == "ortwrap" and data["result"]["failed"] == {}
    assert len(stage["runtime"]["samples"]) == 2
    # FLOPs: ortwrap has no flops.py; that is said once, not reported as failed samples
    assert "FLOPs not counted: backend 'ortwrap': capability 'flops' is unavailable" in result.stderr


@pytest.mark.slow
def test_s2t_preset_runs_the_onnx_exports_on_the_plugin(plugin_path, tmp_path):
    out = tmp_path / "s2t.json"
    result = speechperf(
        plugin_path,
        "bench",
        "--backend",
        "ortwrap",
        "--config",
        "configs/S2T.yaml",
        "--preset",
        "tiny",
        "--dataset-size",
        "2",
        "--warmup",
        "1",
        "--repeat",
        "1",
        "--meters",
        "runtime",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["result"]["backend"] == "ortwrap" and data["result"]["failed"] == {}
    assert len(data["result"]["stages"][0]["runtime"]["samples"]) == 2


@pytest.mark.slow
def test_plugin_options_are_checked_by_the_plugin(plugin_path, tmp_path):
    config = tmp_path / "vad.yaml"
    base = (REPO / "configs" / "VAD.yaml").read_text()
    config.write_text(base + "  options:\n    ortwrap: {graph_optimisation_level: basic}\n")
    for command in (
        ["config", "check", str(config)],
        ["bench", "--backend", "ortwrap", "--config", str(config), "--dataset-size", "1"],
    ):
        result = speechperf(plugin_path, *command)
        assert result.returncode == 2, result.stdout + result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr
        assert (
            "unknown option 'graph_optimisation_level' of backend 'ortwrap' (did you mean "
            "'graph_optimization_level'?); allowed: graph_optimization_level"
        ) in lines[0]
        assert str(config) in lines[0] and "stage1.options.ortwrap" in lines[0]

    config.write_text(base + "  options:\n    ortwrap: {graph_optimization_level: basic}\n")
    out = tmp_path / "ok.json"
    result = speechperf(
        plugin_path,
        "bench",
        "--backend",
        "ortwrap",
        "--config",
        str(config),
        "--dataset-size",
        "1",
        "--warmup",
        "0",
        "--meters",
        "runtime",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    saved = json.loads(out.read_text())["config"]["stage1"]["options"]
    assert saved == {"ortwrap": {"graph_optimization_level": "basic"}}
