"""The conformance suite's rules catch a backend that breaks them, with a message naming the guide's section: a
session that reuses its output buffer, one that renames its output, a seed that raises, options not made with
``key``, a FLOP count off the counting rule, a known graph off its reference, a DeviceMemory without its reason."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, TensorInfo
from speechperf.meters.flops import FlopCount, KnownGraph
from speechperf.testing.conformance import SMALL, BackendConformance, affine_reference, affine_weights


class AffineSession(Session):
    """y = tanh(x @ w + b) in numpy; ``reuse`` writes every result into one buffer, as some runtimes do."""

    backend = "fake"

    def __init__(self, output: str = "y", reuse: bool = False):
        self.weight, self.bias = affine_weights(SMALL)
        self.inputs = (TensorInfo("x", "float32", (None, None, SMALL[0])),)
        self.outputs = (TensorInfo(output, "float32"),)
        self.reuse = reuse
        self.buffer = None

    def run(self, feeds):
        y = affine_reference(feeds["x"], self.weight, self.bias)
        if self.reuse:
            if self.buffer is None or self.buffer.shape != y.shape:
                self.buffer = np.empty_like(y)
            self.buffer[...] = y
            y = self.buffer
        return {self.output_names[0]: y}


suite = BackendConformance()


def test_a_conforming_session_passes_both_rules():
    suite.test_each_call_returns_fresh_arrays(AffineSession())
    suite.test_outputs_are_named_as_in_the_model_file(AffineSession())
    suite.test_outputs_have_the_files_dtype(AffineSession())


def test_a_session_reusing_its_output_buffer_fails_on_fresh_arrays():
    with pytest.raises(AssertionError, match=r'each call must return fresh arrays .*"The session": fresh arrays'):
        suite.test_each_call_returns_fresh_arrays(AffineSession(reuse=True))


def test_a_session_returning_float64_fails_on_dtypes():
    session = AffineSession()
    session.weight = session.weight.astype(np.float64)
    with pytest.raises(AssertionError, match=r"returned float64: return the dtype the file declares.*dtypes"):
        suite.test_outputs_have_the_files_dtype(session)


def test_a_session_renaming_its_output_fails_on_names():
    with pytest.raises(AssertionError, match=r"\['y_merged'\], but the model file names it 'y'.*names as in the file"):
        suite.test_outputs_are_named_as_in_the_model_file(AffineSession(output="y_merged"))


class FakeBackend(BackendBase):
    """Loads AffineSession; each capability is a method here, made wrong by the flags."""

    name = "fake"
    framework_module = framework_package = "numpy"
    capabilities = Capabilities(devices=("cpu",), formats=("fake",))
    seed_raises = False
    flops_off_by = 0
    known_wrong = False
    memory_reason: object = "no device allocator"

    def _load(self, spec, fmt, device):
        return AffineSession()

    def set_threads(self, n):
        pass

    def get_threads(self):
        return 1

    def seed(self, n):
        if self.seed_raises:
            raise NotImplementedError("FakeBackend.seed is not implemented yet")

    def synchronize(self, device="cpu"):
        pass

    def has_capability(self, name):
        return True

    def capability(self, name):
        return None

    def count_flops(self, session, feeds):
        x = feeds["x"]
        return FlopCount(2 * x.shape[0] * x.shape[1] * SMALL[0] * SMALL[1] + self.flops_off_by, "analytic")

    def known_session(self, graph, threads=None):
        backend = self

        class Known(Session):
            inputs = (TensorInfo("x", graph.feeds()["x"].dtype.name, graph.input_shape),)
            outputs = (TensorInfo("y"),)

            def run(self, feeds):
                y = graph.reference(feeds)
                return {"y": y + 1 if backend.known_wrong else y}

        return Known()

    def device_memory(self, device="cpu"):
        return attrs.make_class("Memory", {"available": attrs.field(), "reason": attrs.field()})(
            False, self.memory_reason
        )


AFFINE = (ModelSpec(format="fake"), *affine_weights(SMALL))


def test_a_conforming_fake_backend_passes_the_capability_rules():
    backend = FakeBackend()
    suite.test_seed_is_callable_and_outputs_repeat_after_reseeding(backend, AFFINE)
    suite.test_flops_count_the_affine_model_by_the_counting_rule(backend, AFFINE)
    for kind, dtype in (("matmul", "float32"), ("conv", "float32"), ("matmul", "int8")):
        suite.test_known_graph_matches_its_reference(backend, kind, dtype)
    suite.test_device_memory_says_whether_it_is_available(backend)


def test_a_seed_that_raises_fails():
    backend = FakeBackend()
    backend.seed_raises = True
    with pytest.raises(NotImplementedError, match="seed"):
        suite.test_seed_is_callable_and_outputs_repeat_after_reseeding(backend, AFFINE)


def test_a_flop_count_off_the_rule_fails_naming_the_rule():
    backend = FakeBackend()
    backend.flops_off_by = 1
    with pytest.raises(AssertionError, match=r'2\*batch\*time\*in\*out = 896 \(docs/backends.md, "FLOPs"\)'):
        suite.test_flops_count_the_affine_model_by_the_counting_rule(backend, AFFINE)


def test_a_known_graph_off_its_reference_fails():
    backend = FakeBackend()
    backend.known_wrong = True
    with pytest.raises(AssertionError, match="differs from graph.reference"):
        suite.test_known_graph_matches_its_reference(backend, KnownGraph("matmul").kind, "float32")


def test_a_device_memory_without_a_reason_fails():
    backend = FakeBackend()
    backend.memory_reason = None
    with pytest.raises(AssertionError, match='reason: str .*"Device memory"'):
        suite.test_device_memory_says_whether_it_is_available(backend)


def test_options_not_made_with_key_fail():
    @attrs.frozen
    class Plain:
        streams: int = 1

    backend = FakeBackend()
    backend.options_class = Plain
    with pytest.raises(AssertionError, match=r"'streams' is not made with speechperf.values.key.*\"Options\""):
        suite.test_options_class_keys_are_made_with_key(backend)
