"""The conformance suite's session rules catch a backend that breaks them, with a message naming the guide's
section: a session that reuses its output buffer, and one that renames its output."""

from __future__ import annotations

import numpy as np
import pytest

from speechperf.backend import Session, TensorInfo
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
