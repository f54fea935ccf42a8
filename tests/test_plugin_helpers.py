"""The public helpers docs/backends.md gives a plugin for a runtime that loads no ONNX ("Runtimes that load no
ONNX"): the zoo's example inputs and stated widths, the framework version hook, the cache folder, and the step
profiler's callbacks with the steps' spans. Framework-free (the pt2 example plugin runs them on torch:
tests/test_example_plugin_pt2.py)."""

from __future__ import annotations

import importlib.metadata
import time

import numpy as np
import pytest

from speechperf.backend import BackendBase, Capabilities
from speechperf.cache import CACHE_ENV, plugin_cache_dir
from speechperf.profiler import Recorded, StepProfiler
from speechperf.profiler.categories import build
from speechperf.zoo.catalog import get_model, models_at
from speechperf.zoo.examples import example_inputs, input_shapes


def test_input_shapes_state_the_width_the_catalog_leaves_as_none():
    declared = {t.name: t.shape for t in get_model("s2t").component("decoder_step").inputs}
    assert declared["encoder_out"] == ("batch", "enc_frames", None)
    assert input_shapes("s2t", "decoder_step", "tiny")["encoder_out"] == ("batch", "enc_frames", 64)
    assert input_shapes("s2t", "decoder_step", "base")["encoder_out"] == ("batch", "enc_frames", 256)
    assert input_shapes("s2t", "encoder")["features"] == ("batch", "frames", 80)


@pytest.mark.parametrize("model", models_at("tiny"))
def test_every_none_of_the_zoo_is_a_fixed_width_and_every_name_an_axis_that_moves(model):
    """What docs/backends.md says None means in the zoo's specs, checked over every component: its size is the same
    at other batches and lengths, and the batch axis follows the batch."""
    for comp in get_model(model).components:
        small = example_inputs(model, comp.name, batch=1, length=comp.test_lengths[0])
        large = example_inputs(model, comp.name, batch=3, length=comp.test_lengths[2])
        stated = input_shapes(model, comp.name)
        for info in comp.inputs:
            assert small[info.name].dtype == np.dtype(info.dtype) and set(small) == set(comp.input_names)
            for axis, size in enumerate(stated[info.name]):
                if isinstance(size, int):
                    assert small[info.name].shape[axis] == large[info.name].shape[axis] == size, (comp.name, info)
                elif size == "batch":
                    assert (small[info.name].shape[axis], large[info.name].shape[axis]) == (1, 3), (comp.name, info)


def test_example_inputs_are_seeded_and_default_to_batch_2():
    one, two = example_inputs("s2t", "encoder", seed=3), example_inputs("s2t", "encoder", seed=3)
    assert one["features"].shape[0] == 2 and np.array_equal(one["features"], two["features"])
    assert not np.array_equal(one["features"], example_inputs("s2t", "encoder", seed=4)["features"])


class _Versioned(BackendBase):
    name = "versioned"
    capabilities = Capabilities(formats=("x",))


@pytest.mark.parametrize(
    "module, package, version",
    [
        ("numpy", "numpy", np.__version__),  # __version__
        ("attr.validators", "attrs", importlib.metadata.version("attrs")),  # none: the distribution's
        ("speechperf.values", "no-such-distribution-here", "unknown"),  # neither
    ],
)
def test_the_version_availability_reports(module, package, version):
    backend = type("B", (_Versioned,), {"framework_module": module, "framework_package": package})()
    status = backend.availability()
    assert status.ok and status.version == version


def test_plugin_cache_dir_is_under_the_speechperf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    folder = plugin_cache_dir("pt2")
    assert folder == tmp_path / "cache" / "plugins" / "pt2" and folder.is_dir()
    for bad in ("", "..", "a/b"):
        with pytest.raises(ValueError, match="registered name"):
            plugin_cache_dir(bad)


class _Callbacks(StepProfiler):
    """A profiler of nothing, recording the callbacks it gets and what step_spans() holds at _close."""

    backend = "calls"
    warmup_steps = 0

    def __init__(self, options):
        super().__init__(options, echo=False)
        self.calls: list[tuple] = []
        self.spans_at_close: dict[int, int] = {}

    def _open(self, step):
        self.calls.append(("open", step))

    def _advance(self, step, num_samples):
        self.calls.append(("advance", step, num_samples))

    def _close(self):
        self.calls.append(("close",))
        self.spans_at_close = self.step_spans()
        spans = [(step, "MatMul", ns // 2, None) for step, ns in self.spans_at_close.items()]
        return Recorded(steps=tuple(self.spans_at_close), categories=build("calls", spans, self.spans_at_close))


def test_batch_range_1_3_is_open_advance_close_and_two_timed_steps():
    prof = _Callbacks("batch_range=[1,3]")
    with prof:
        for _ in range(4):
            time.sleep(0.01)
            prof.step(num_samples=4)
    assert prof.calls == [("open", 1), ("advance", 2, 4), ("close",)]
    assert set(prof.spans_at_close) == {1, 2} and all(ns >= 10_000_000 for ns in prof.spans_at_close.values())
    table = prof.summary.categories
    assert table.steps == 2 and table.step_ns == sum(prof.spans_at_close.values())
    assert table.between_ns == table.step_ns - table.ops_ns > 0  # half of each step outside the one op
    assert list(prof.summary.timing.step_ns) == [prof.spans_at_close[1], prof.spans_at_close[2]]
