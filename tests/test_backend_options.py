"""Backend ``options:`` in stage configs: declared per backend, checked when the config is read (``config check``
too), one line naming the key, the backend and what is allowed; and really applied to the loaded sessions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.config import load_config

REPO = Path(__file__).resolve().parents[1]


def vad_config(tmp_path: Path, options: str) -> Path:
    path = tmp_path / "vad.yaml"
    path.write_text((REPO / "configs" / "VAD.yaml").read_text() + f"  options: {options}\n")
    return path


@pytest.mark.parametrize(
    "options, message",
    [
        (
            "{onnxruntime: {graph_optimisation_level: basic}}",
            "stage1.options.onnxruntime: unknown option 'graph_optimisation_level' of backend 'onnxruntime' (did you mean "
            "'graph_optimization_level'?); allowed: graph_optimization_level, providers, intra_op_spinning, "
            "log_severity_level, enable_profiling, profile_file_prefix",
        ),
        (
            "{onnxruntime: {graph_optimization_level: max}}",
            "options.onnxruntime.graph_optimization_level = 'max'; allowed: disable, basic, extended, all",
        ),
        ("{paddle: {api: grpc}}", "options.paddle.api = 'grpc'; allowed: predictor, jit"),
        (
            "{torch: {optimize_for_inference: 1}}",
            "options.torch.optimize_for_inference = 1 (int); expected true or false",
        ),
        ("{onnxrt: {}}", "unknown backend 'onnxrt' (did you mean 'onnxruntime'?)"),
        ("[basic]", "stage1.options = ['basic'] (list); expected a mapping of backend name -> options"),
    ],
)
def test_bad_options_are_one_line_exit_2_from_config_check_and_bench(tmp_path, options, message):
    config = vad_config(tmp_path, options)
    for args in (["config", "check", str(config)], ["bench", "-b", "onnxruntime", "--config", str(config)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], lines
        assert lines[0].startswith(f"Error: {config}:13: ")  # the file and the line of `options`


def test_options_of_every_backend_are_kept_per_backend(tmp_path):
    cfg = load_config(
        vad_config(
            tmp_path,
            "{onnxruntime: {graph_optimization_level: disable, providers: [CPUExecutionProvider]}, paddle: {api: jit}}",
        )
    )
    assert cfg.stages[0].options == {
        "onnxruntime": {"graph_optimization_level": "disable", "providers": ("CPUExecutionProvider",)},
        "paddle": {"api": "jit"},
    }


def test_onnxruntime_options_reach_the_session(tmp_path):
    import onnxruntime as ort

    from speechperf.benchmark.build import build_stages
    from speechperf.registry import get_backend

    cfg = load_config(vad_config(tmp_path, "{onnxruntime: {graph_optimization_level: basic}}"))
    (stage,) = build_stages(cfg, get_backend("onnxruntime"), "cpu", 1, tmp_path)
    session = stage.sessions["vad"].session
    assert session.get_session_options().graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC


def test_paddle_api_option_picks_the_jit_loader(tmp_path):
    from speechperf.backend import ModelSpec
    from speechperf.registry import get_backend

    paddle = pytest.importorskip("paddle")
    layer = paddle.nn.Linear(4, 3)
    static = paddle.jit.to_static(
        layer, input_spec=[paddle.static.InputSpec([None, 4], "float32", "x")], full_graph=True
    )
    paddle.jit.save(static, str(tmp_path / "lin"))
    path = next(p for p in (tmp_path / "lin.json", tmp_path / "lin.pdmodel") if p.exists())
    backend = get_backend("paddle")
    x = {"x": np.ones((2, 4), np.float32)}
    predictor = backend.load(ModelSpec(path, outputs=None), threads=1)
    jit = backend.load(ModelSpec(path, options={"api": "jit"}), threads=1)
    assert type(predictor).__name__ == "PredictorSession" and type(jit).__name__ != "PredictorSession"
    np.testing.assert_allclose(list(jit(x).values())[0], list(predictor(x).values())[0], atol=1e-6)


def test_torch_optimize_for_inference_gives_the_same_outputs(tmp_path):
    torch = pytest.importorskip("torch")
    from speechperf.backend import ModelSpec
    from speechperf.registry import get_backend

    module = torch.nn.Sequential(torch.nn.Conv1d(2, 4, 3), torch.nn.BatchNorm1d(4), torch.nn.ReLU()).eval()
    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(module), str(path))
    backend = get_backend("torch")
    x = {"input": np.random.default_rng(0).standard_normal((1, 2, 16)).astype(np.float32)}
    plain = backend.load(ModelSpec(path), threads=1)
    optimized = backend.load(ModelSpec(path, options={"optimize_for_inference": True}), threads=1)
    assert "BatchNorm" in str(plain.module.graph) or hasattr(plain.module, "1")
    assert "batch_norm" not in str(optimized.module.graph)  # folded into the conv
    np.testing.assert_allclose(optimized(x)["output"], plain(x)["output"], atol=1e-5)
