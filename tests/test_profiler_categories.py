"""The op-category rules on the names each framework gives its ops (taken from real torch, paddle and onnxruntime
traces of the conv + LSTM training loop of tests/test_profiler_dropin.py), and the table's arithmetic."""

from __future__ import annotations

import pytest

from speechperf.profiler.categories import BETWEEN, CATEGORIES, CategoryTable, build, category_of

NAMES = {
    "matmul/linear": [
        "aten::linear",
        "aten::addmm",
        "matmul dygraph",
        "matmul pybind_imperative_func",
        "MatMul",
        "Gemm",
    ],
    "conv": ["aten::conv1d", "conv2d dygraph", "conv2d pybind_imperative_func", "FusedConv", "Conv", "Conv1D"],
    "rnn": ["aten::lstm", "rnn dygraph", "rnn pybind_imperative_func", "LSTM", "GRU"],
    "attention": ["aten::scaled_dot_product_attention", "flash_attn dygraph", "MultiHeadAttention", "Attention"],
    "norm": ["aten::layer_norm", "layer_norm dygraph", "BatchNormalization", "LayerNorm", "aten::group_norm"],
    "elementwise": [
        "aten::relu",
        "aten::mean",
        "aten::cross_entropy_loss",
        "relu pybind_imperative_func",
        "__mul__ pybind_patch_func",
        "__ne__ pybind_patch_func",
        "cross_entropy_with_softmax dygraph",
        "full dygraph",
        "ReduceMean",
        "Relu",
        "aten::ones_like",
    ],
    "data movement": [
        "aten::transpose",
        "aten::to",
        "aten::stack",
        "transpose pybind_imperative_func",
        "unsqueeze dygraph",
        "cast dygraph",
        "Transpose",
        "Reshape",
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "_DataLoaderIterSingleProcess",
    ],
    "optimizer": [
        "Optimizer.step#Adam.step",
        "Optimizer.zero_grad#Adam.zero_grad",
        "adam_ dygraph",
        "adam_ pybind_imperative_func",
        "sgd_ dygraph",
    ],
    "backward total": [
        "autograd::engine::evaluate_function: ConvolutionBackward0",
        "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
        "Global_Conv2dGradNodeFinal",
        "Global_RnnGradNode",
        "backward",
        "conv2d_grad",
    ],
    "other": ["my_custom_op", "Model", "aten::normal"],
}


@pytest.mark.parametrize("category,name", [(c, n) for c, names in NAMES.items() for n in names])
def test_category_of_real_op_names(category, name):
    assert category_of(name) == category


def test_every_category_has_names():
    assert set(NAMES) == set(CATEGORIES)


def test_the_table_adds_up_to_the_step():
    spans = [
        (3, "aten::conv1d", 2_000_000, None),
        (3, "aten::lstm", 1_000_000, None),
        (3, "whatever", 500_000, "optimizer"),  # a whole scope put in its category by the backend
        (4, "aten::conv1d", 2_000_000, None),
        (9, "aten::conv1d", 7_000_000, None),  # a step that is not recorded is dropped
    ]
    table = build("torch", spans, {3: 4_000_000, 4: 3_000_000})
    assert table.steps == 2 and table.ns("conv") == 4_000_000 and table.ns("optimizer") == 500_000
    assert table.ns(BETWEEN) == 7_000_000 - 5_500_000
    rows = table.rows()
    assert [name for name, _, _ in rows] == [*CATEGORIES, BETWEEN]
    assert dict((n, ms) for n, ms, _ in rows)["conv"] == 2.0  # ms per step
    assert sum(share for _, _, share in rows) == pytest.approx(1.0)
    assert build("torch", spans, {}) is None


def write(tmp_path, name, backend, steps, spans_ms, step_ms):
    spans = [(s, op, round(ms * 1e6), None) for s in range(steps) for op, ms in spans_ms]
    table = build(backend, spans, {s: round(step_ms * 1e6) for s in range(steps)}, f"{backend} rules")
    path = tmp_path / f"{name}.categories.json"
    path.write_text(table.to_json())
    return path


def test_profile_compare_puts_two_runs_side_by_side(tmp_path):
    from click.testing import CliRunner

    from speechperf.cli import main

    a = write(tmp_path, "paddle_trace", "paddle", 10, [("conv2d dygraph", 2.0), ("Global_RnnGradNode", 1.0)], 4.0)
    b = write(tmp_path, "torch_trace", "torch", 5, [("aten::conv1d", 1.0), ("aten::lstm", 0.5)], 2.0)
    result = CliRunner().invoke(main, ["profile-compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in result.output.splitlines()
        if line.startswith("│")
    }
    assert rows["conv"] == ["2.000 (50.0%)", "1.000 (50.0%)", "0.50x"]
    assert rows["backward total"] == ["1.000 (25.0%)", "0.000 (0.0%)", "0.00x"]
    assert rows["between ops"] == ["1.000 (25.0%)", "0.500 (25.0%)", "0.50x"]
    assert rows["step"] == ["4.000 (100.0%)", "2.000 (100.0%)", "0.50x"]
    assert "paddle, 10 steps" in result.output and "torch, 5 steps" in result.output


def test_profile_compare_bad_input_is_one_line(tmp_path):
    from click.testing import CliRunner

    from speechperf.cli import main

    junk = tmp_path / "junk.json"
    junk.write_text('{"backend": "torch"}')
    good = write(tmp_path, "t", "torch", 1, [("aten::conv1d", 1.0)], 2.0)
    result = CliRunner().invoke(main, ["profile-compare", str(good), str(junk)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{junk}: not a category table written by the step profiler" in result.output
    result = CliRunner().invoke(main, ["profile-compare", str(good)])
    assert result.exit_code == 2 and "needs two tables or more" in result.output


def test_a_category_table_is_a_profile_document_and_the_old_format_still_reads(tmp_path):
    import json

    from speechperf.results import read

    path = write(tmp_path, "t", "torch", 2, [("aten::conv1d", 1.0)], 2.0)
    doc = read(path)
    assert doc.kind == "profile" and doc["steps"] == 2
    assert {r["category"]: r["ms_per_step"] for r in doc.rows}["conv"] == 1.0
    old = {k: v for k, v in json.loads(path.read_text()).items() if k in ("backend", "steps", "step_ns", "by_category")}
    (tmp_path / "old.categories.json").write_text(json.dumps(old))  # as a speechperf before the envelope wrote it
    table = CategoryTable.read(tmp_path / "old.categories.json")
    assert table.steps == 2 and table.ns("conv") == 2_000_000


def test_profile_compare_refuses_a_legacy_table_unless_allowed(tmp_path):
    from click.testing import CliRunner

    from speechperf.cli import main
    from speechperf.profiler.categories import PARTIAL_MARK

    spans = [(0, "adam pybind_imperative_func", 1_000_000, None)]
    legacy = tmp_path / "model.profile.categories.json"
    legacy.write_text(build("paddle", spans, {0: 2_000_000}, f"paddle legacy API: {PARTIAL_MARK}").to_json())
    torch_table = write(tmp_path, "torch_trace", "torch", 1, [("Optimizer.step#Adam.step", 1.0)], 2.0)
    result = CliRunner().invoke(main, ["profile-compare", str(legacy), str(torch_table)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "recorded with paddle's legacy profiler API" in result.output and "--allow-legacy" in result.output
    result = CliRunner().invoke(main, ["profile-compare", "--allow-legacy", str(legacy), str(torch_table)])
    assert result.exit_code == 0 and "optimizer" in result.output


def test_profile_compare_labels_two_tables_of_one_backend_and_one_name_by_folder(tmp_path):
    from click.testing import CliRunner

    from speechperf.cli import main

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write(tmp_path / "a", "model.profile", "paddle", 1, [("conv2d dygraph", 1.0)], 2.0)
    b = write(tmp_path / "b", "model.profile", "paddle", 1, [("conv2d dygraph", 1.0)], 2.0)
    result = CliRunner().invoke(main, ["profile-compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "a/model.profile (paddle)" in result.output and "b/model.profile / a/model.profile" in result.output
