"""The analytic FLOP count of every reference model component (tiny preset) is the same on torch, paddle and
onnxruntime, at two input lengths, and for both ONNX exports (from torch and from paddle)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("paddle")
pytest.importorskip("onnxruntime")

from speechperf.registry import get_backend  # noqa: E402
from speechperf.zoo.build import ensure_built, load_session  # noqa: E402
from speechperf.zoo.catalog import MODEL_MODULES, get_model  # noqa: E402

# Builds the tiny zoo once into the cache (SPEECHPERF_CACHE_DIR, set by tests/conftest.py) when it is missing; about 1 minute with the cache.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]

COMPONENTS = [(m, c.name) for m in MODEL_MODULES for c in get_model(m).components]
FORMATS = {"torch-eager": "torch", "paddle-eager": "paddle", "onnx-torch": "onnxruntime", "onnx-paddle": "onnxruntime"}


@pytest.mark.parametrize("model, component", COMPONENTS)
def test_reference_model_counts_are_equal_on_every_backend(model, component):
    folder = ensure_built(model, "tiny")
    reference = get_model(model)
    lengths = reference.component(component).test_lengths[:2]
    sessions = {fmt: load_session(folder, component, fmt, threads=1) for fmt in FORMATS}
    for length in lengths:
        feeds = reference.example_feeds(component, "tiny", 2, length, np.random.default_rng(length))
        counts = {fmt: get_backend(FORMATS[fmt]).count_flops(s, feeds) for fmt, s in sessions.items()}
        totals = {fmt: c.total for fmt, c in counts.items()}
        assert len(set(totals.values())) == 1, (length, totals)
        assert totals["torch-eager"] > 0
        kinds = {fmt: dict(c.by_kind) for fmt, c in counts.items()}
        assert all(k == kinds["torch-eager"] for k in kinds.values()), (length, kinds)
