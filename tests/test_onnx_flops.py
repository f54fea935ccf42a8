"""The shared ONNX graph FLOP counter (speechperf.meters.onnx_flops) counts what the onnxruntime backend counted
before it moved out of backends/onnxruntime/flops.py: tests/data/onnx_flops_main.json holds those counts, computed
with main's code at be98833 (every tiny zoo component in both ONNX exports, batch 1 and 2, at its three test
lengths; silero's ONNX file at 16 and 8 kHz). It counts them without onnxruntime (its default runner is onnx's
reference evaluator), as a plugin that loads ONNX would, and the onnxruntime backend, which now calls it with ORT as
its runner, counts the same."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("paddle")
pytest.importorskip("onnxruntime")
# find_spec, not importorskip: importing silero_vad runs torch.set_num_threads(1), and a paddle loaded after that
# runs on one core whatever its predictor is told (paddlepaddle 3.3.1), which failed paddle's two-thread
# conformance test in the same pytest process.
if importlib.util.find_spec("silero_vad") is None:
    pytest.skip("needs silero-vad (the vad extra)", allow_module_level=True)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]

EXPECTED = Path(__file__).parent / "data" / "onnx_flops_main.json"

# Counts every model with COUNT(session_or_path, feeds) and prints the JSON; run in the test and in a child.
COUNT_ALL = """
import json
import numpy as np
from speechperf.adapters.vad import silero_data_dir, silero_files
from speechperf.zoo.build import ensure_built, model_spec
from speechperf.zoo.catalog import MODEL_MODULES, get_model


def count_all(COUNT, load):
    out = {}

    def record(key, count):
        out[key] = {
            "total": int(count.total),
            "by_kind": {k: int(v) for k, v in sorted(count.by_kind.items())},
            "uncounted": sorted(count.uncounted),
        }

    for name in MODEL_MODULES:
        folder = ensure_built(name, "tiny")
        ref = get_model(name)
        for comp in ref.components:
            for fmt in ("onnx-torch", "onnx-paddle"):
                session = load(model_spec(folder, comp.name, fmt))
                for batch in (1, 2):
                    for length in comp.test_lengths:
                        feeds = ref.example_feeds(comp.name, "tiny", batch, length, np.random.default_rng(length))
                        record(f"{name}/{comp.name}/{fmt}/b{batch}/n{length}", COUNT(session, feeds))
    silero = load(silero_files(silero_data_dir())["onnx"])
    for sr, chunk, context in ((16000, 512, 64), (8000, 256, 32)):
        for batch in (1, 3):
            feeds = {
                "input": np.random.default_rng(0).standard_normal((batch, context + chunk)).astype(np.float32),
                "state": np.zeros((2, batch, 128), np.float32),
                "sr": np.array(sr, np.int64),
            }
            record(f"silero/onnx/sr{sr}/b{batch}", COUNT(silero, feeds))
    return out
"""


def _count_all(count, load) -> dict:
    scope: dict = {}
    exec(COUNT_ALL, scope)
    return scope["count_all"](count, load)


def test_the_onnxruntime_backend_counts_as_before():
    from speechperf.registry import get_backend

    ort = get_backend("onnxruntime")
    counts = _count_all(ort.count_flops, lambda spec: ort.load(spec, device="cpu", threads=1))
    assert counts == json.loads(EXPECTED.read_text())


def test_the_shared_counter_counts_as_before_without_onnxruntime(tmp_path):
    """A child where ``import onnxruntime`` fails counts each model file with the shared counter alone."""
    script = tmp_path / "count.py"
    script.write_text(
        "import sys\nsys.modules['onnxruntime'] = None  # import onnxruntime raises ImportError\n"
        + COUNT_ALL
        + textwrap.dedent(
            """
            from speechperf.meters.onnx_flops import count_onnx_flops
            counts = count_all(count_onnx_flops, lambda spec: spec.path)
            assert "onnxruntime" not in [m for m in sys.modules if sys.modules[m] is not None]
            print(json.dumps(counts))
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == json.loads(EXPECTED.read_text())


def test_a_session_without_a_known_file_is_one_line():
    from speechperf.backend import Session
    from speechperf.errors import SpeechperfError
    from speechperf.meters.onnx_flops import count_onnx_flops

    class InMemory(Session):
        backend, inputs, outputs = "fake", (), ()

        def run(self, feeds):
            return {}

    with pytest.raises(SpeechperfError, match=r"ONNX model file is not known .*model_of="):
        count_onnx_flops(InMemory(), {"x": np.zeros((1, 2), np.float32)})


def test_the_reference_runner_returns_an_lstms_cell_state_as_onnxruntime_does():
    """The default runner's LSTM adds Y_c (onnx's reference returns Y and Y_h only): shape (directions, batch,
    hidden) as the spec and onnxruntime give it, so a graph that reads it further (silero's state concat) runs."""
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    from speechperf.meters.onnx_flops import reference_runner

    hidden, features, time, batch = 4, 3, 5, 2
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((1, 4 * hidden, size)).astype(np.float32), name)
        for name, size in (("W", features), ("R", hidden))
    ]
    lstm = helper.make_node("LSTM", ["X", "W", "R"], ["Y", "Y_h", "Y_c"], hidden_size=hidden)
    graph = helper.make_graph(
        [lstm],
        "lstm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [time, batch, features])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("Y", "Y_h", "Y_c")],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((time, batch, features)).astype(np.float32)
    got = reference_runner(model)({"X": x})
    want = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        ["Y_c"], {"X": x}
    )[0]
    assert got["Y_c"].shape == want.shape == (1, batch, hidden)
    np.testing.assert_allclose(got["Y_c"], want, rtol=1e-5, atol=1e-6)
