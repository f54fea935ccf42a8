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


@pytest.mark.parametrize("kind, dtype", [("matmul", "float32"), ("conv", "float32"), ("matmul", "int8")])
def test_the_known_session_example_counts_and_runs_and_cleans_up(kind, dtype):
    from speechperf.meters.flops import KnownGraph
    from speechperf.meters.onnx_flops import count_onnx_flops

    # The guide's plugin stands in for onnxruntime: a plugin that loads ONNX writes exactly this.
    code = guide_block("def known_session").replace(
        "from speechperf_myrt.backend import MyrtBackend",
        "from speechperf.backends.onnxruntime import OnnxRuntimeBackend as MyrtBackend",
    )
    namespace: dict = {}
    exec(compile(code, str(GUIDE), "exec"), namespace)
    graph = KnownGraph(kind, dtype=dtype)
    session = namespace["known_session"](graph, threads=1)
    folder = Path(session.spec.path).parent
    gc.collect()  # the function has returned: the file must still be there for the FLOP count and the runs
    assert (folder / "known.onnx").is_file()
    assert count_onnx_flops(session, graph.feeds()).total == graph.expected
    out, expected = session(graph.feeds())["y"], graph.reference(graph.feeds())
    assert out.dtype == expected.dtype  # int8: x uint8, w int8 -> y int32
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    del session
    gc.collect()
    assert not folder.exists()


def test_the_dtype_rule_maps_onnx_types_to_the_names_sessions_declare():
    from onnx import TensorProto

    from speechperf.meters.onnx_files import onnx_dtype

    # The guide's list: 1 -> float32, 7 -> int64, 10 -> float16, 9 -> bool; the types numpy lacks are None.
    guide = GUIDE.read_text()
    pairs = re.findall(r"(\d+) → `(\w+)`", guide)
    assert len(pairs) >= 4
    for code, name in pairs:
        assert onnx_dtype(int(code)) == name
    assert "(string, bfloat16, float8, int4, uint4) is `None`" in guide
    for lacking in (TensorProto.STRING, TensorProto.BFLOAT16, TensorProto.FLOAT8E5M2, TensorProto.INT4):
        assert onnx_dtype(lacking) is None
