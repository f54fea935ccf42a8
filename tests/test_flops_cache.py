"""FLOP counts cached on disk: a second run reads them, a changed model file is counted again, and the bench says
when counting is the long part."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.backend import ModelSpec
from speechperf.cli import main
from speechperf.meters.flops import KnownGraph
from speechperf.meters.flops_cache import DiskFlopCache
from speechperf.registry import get_backend


def matmul_file(path: Path, k: int, n: int) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(n).standard_normal((k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


class CallsCounted:
    """The real onnxruntime backend, with its count_flops calls counted (to see that the cache answered)."""

    def __init__(self):
        self.real = get_backend("onnxruntime")
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def count_flops(self, session, feeds):
        self.calls += 1
        return self.real.count_flops(session, feeds)


def count(root: Path, path: Path, batch: int, k: int):
    backend = CallsCounted()
    session = backend.real.load(ModelSpec(path), threads=1)
    cache = DiskFlopCache(backend, root)
    result = cache.count_flops(session, {"x": np.zeros((batch, k), np.float32)})
    return result, backend.calls, cache


def test_second_count_is_read_from_disk_and_a_changed_model_is_counted_again(tmp_path):
    root = tmp_path / "flops"
    model = matmul_file(tmp_path / "mm.onnx", k=16, n=8)
    first, calls, cache = count(root, model, batch=4, k=16)
    assert first.total == 2 * 4 * 16 * 8 and calls == 1 and cache.misses == 1
    assert len(list(root.rglob("*.json"))) == 1 and not list(root.rglob("*.partial"))

    again, calls, cache = count(root, model, batch=4, k=16)  # a new cache object: as a second process would
    assert again == first and calls == 0 and cache.hits == 1

    other_shape, calls, _ = count(root, model, batch=3, k=16)
    assert other_shape.total == 2 * 3 * 16 * 8 and calls == 1

    matmul_file(model, k=16, n=32)  # the same path, another model: never trust the stored count
    changed, calls, _ = count(root, model, batch=4, k=16)
    assert changed.total == 2 * 4 * 16 * 32 and calls == 1


def test_unreadable_entry_is_counted_again_and_sessions_without_files_are_not_stored(tmp_path):
    root = tmp_path / "flops"
    model = matmul_file(tmp_path / "mm.onnx", k=16, n=8)
    count(root, model, batch=2, k=16)
    (entry,) = root.rglob("*.json")
    entry.write_text("{not json")
    recounted, calls, _ = count(root, model, batch=2, k=16)
    assert calls == 1 and recounted.total == 2 * 2 * 16 * 8
    assert json.loads(entry.read_text())["total"] == recounted.total  # rewritten whole

    graph = KnownGraph("matmul")
    backend = CallsCounted()
    in_memory = backend.real.known_session(graph)  # built in memory: no file to key the count by
    cache = DiskFlopCache(backend, tmp_path / "other")
    assert cache.count_flops(in_memory, graph.feeds()).total == graph.expected
    assert cache.count_flops(in_memory, graph.feeds()).total == graph.expected
    assert backend.calls == 2 and not (tmp_path / "other").exists()


@pytest.mark.slow
def test_bench_says_it_counts_flops_and_reads_them_back_on_the_second_run(tmp_path):
    args = ["bench", "--backend", "paddle", "--meters", "flops", "--dataset-size", "2", "--preset", "tiny"]
    runs = []
    for _ in range(2):
        out = tmp_path / "r.json"
        result = CliRunner().invoke(main, [*args, "--output", str(out)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        runs.append((result.output, json.loads(out.read_text())["result"]["stages"][0]["flops"]))
    (first_log, first), (second_log, second) = runs
    assert "counting FLOPs (analytic, paddle) ..." in first_log
    assert second == first and first["total"] > 0
    assert ", 0 counted" in second_log and "read from the cache, 0 counted" in second_log
