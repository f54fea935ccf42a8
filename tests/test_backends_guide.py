"""The code docs/backends.md gives a plugin author works as written: the known-graph example runs on a real
runtime, counts the closed-form FLOPs with the shared counter and keeps its file exactly as long as the session."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "backends.md"


def guide_block(containing: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    (block,) = [b for b in blocks if containing in b]
    return block


@pytest.mark.parametrize("kind", ["matmul", "conv"])
def test_the_known_session_example_counts_and_runs_and_cleans_up(kind):
    from speechperf.meters.flops import KnownGraph
    from speechperf.meters.onnx_flops import count_onnx_flops

    # The guide's plugin stands in for onnxruntime: a plugin that loads ONNX writes exactly this.
    code = guide_block("def known_session").replace(
        "from speechperf_myrt.backend import MyrtBackend",
        "from speechperf.backends.onnxruntime import OnnxRuntimeBackend as MyrtBackend",
    )
    namespace: dict = {}
    exec(compile(code, str(GUIDE), "exec"), namespace)
    graph = KnownGraph(kind)
    session = namespace["known_session"](graph, threads=1)
    folder = Path(session.spec.path).parent
    gc.collect()  # the function has returned: the file must still be there for the FLOP count and the runs
    assert (folder / "known.onnx").is_file()
    assert count_onnx_flops(session, graph.feeds()).total == graph.expected
    out = session(graph.feeds())["y"]
    np.testing.assert_allclose(out, graph.reference(graph.feeds()), rtol=1e-4, atol=1e-4)
    del session
    gc.collect()
    assert not folder.exists()


def test_the_dtype_rule_maps_onnx_types_to_the_names_sessions_declare():
    from onnx import TensorProto, helper

    # The guide's table: 1 -> float32, 7 -> int64, 10 -> float16, 9 -> bool.
    guide = GUIDE.read_text()
    for code, name in re.findall(r"(\d+) → `(\w+)`", guide):
        assert np.dtype(helper.tensor_dtype_to_np_dtype(int(code))).name == name
    assert TensorProto.FLOAT == 1 and TensorProto.INT64 == 7
