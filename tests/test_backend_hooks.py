"""``hooks(backend)``: the one way the core reads a backend's optional hooks, with OptionalHooks' defaults for a
backend that implements only the protocol (as a plugin may), and the backend's own hooks where it has them."""

from __future__ import annotations

import pytest

from speechperf.backend import (
    HOOKS,
    BackendBase,
    Capabilities,
    CapabilityUnavailableError,
    ModelSpec,
    OptionalHooks,
    hooks,
)
from speechperf.errors import DeviceError, ModelFileError, SpeechperfError
from speechperf.registry import get_backend


class ProtocolOnly:
    """A backend with the protocol's attributes and nothing else."""

    name = "bare"
    capabilities = Capabilities(devices=("cpu",), formats=("onnx",))


class CountsFlops(ProtocolOnly):
    def count_flops(self, session, feeds):
        return ("counted", session, dict(feeds))


def test_a_protocol_only_backend_gets_the_declared_defaults():
    h = hooks(ProtocolOnly())
    assert (h.options_class, h.zoo_formats, h.suffix_formats, h.builds_reference_weights) == (None, {}, {}, False)
    assert (h.default_zoo_format, h.silero_vad_port, h.distribution) == (None, None, None)
    assert h.check_device("cpu") == "cpu"
    with pytest.raises(DeviceError, match="^device 'cuda' is not supported by backend 'bare'; it supports: cpu$"):
        h.check_device("cuda")
    with pytest.raises(ModelFileError, match="^format 'inference' is not loaded by backend 'bare'; it loads: onnx$"):
        h.check_format(ModelSpec("m.json"), "inference")
    assert not any(h.has_capability(c) for c in ("profiler", "flops", "known_graph", "memory", "quantize"))
    with pytest.raises(CapabilityUnavailableError, match="^backend 'bare': capability 'flops' is unavailable"):
        h.count_flops(None, {})
    with pytest.raises(SpeechperfError, match="^backend 'bare' builds no zoo formats$"):
        h.build_reference("s2t", "tiny", "out")


def test_a_backend_s_own_hook_wins_and_counts_as_the_capability():
    backend = CountsFlops()
    h = hooks(backend)
    assert h.has_capability("flops") and not h.has_capability("memory")
    assert h.count_flops("session", {"x": 1}) == ("counted", "session", {"x": 1})
    assert hooks(h) is h  # asking twice is the same view


def test_only_declared_hooks_can_be_asked_for():
    with pytest.raises(AttributeError, match="'zoo_format' is not an optional hook of a backend; the hooks: "):
        hooks(ProtocolOnly()).zoo_format  # noqa: B018 - the attribute access is the test


def test_every_hook_is_declared_on_optional_hooks_and_backend_base_has_them_all():
    assert "zoo_formats" in HOOKS and "has_capability" in HOOKS and "export_weights" in HOOKS
    assert OptionalHooks in BackendBase.__mro__
    assert all(hasattr(BackendBase, name) for name in HOOKS)


def test_built_in_backends_answer_through_the_view():
    torch, paddle = get_backend("torch"), get_backend("paddle")
    assert hooks(torch).builds_reference_weights and not hooks(paddle).builds_reference_weights
    assert hooks(paddle).silero_vad_port == "speechperf.backends.paddle.silero_vad:build"
    assert hooks(get_backend("onnxruntime")).suffix_formats == {".onnx": "onnx"}
    assert hooks(torch).has_capability("flops")  # found as backends/torch/flops.py, not imported


def test_a_backend_that_writes_no_weights_needs_them_to_build_the_zoo(tmp_path):
    """OptionalHooks.build_reference's ``weights`` defaults to None (the weight-writing backend's call); paddle,
    which reads torch's, names the missing weights instead of failing on Path(None)."""
    paddle = get_backend("paddle")
    with pytest.raises(SpeechperfError, match="from the torch backend's weights; none given"):
        hooks(paddle).build_reference("s2t", "tiny", tmp_path)
