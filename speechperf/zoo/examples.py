"""A reference model's example inputs and the sizes of its inputs' axes, for a plugin that needs them to build a
program (an exporter that traces example inputs, a runtime that wants every width fixed).

A shape in the catalog (``Component.inputs``, and the ``ModelSpec.inputs`` a backend receives for a zoo model) has
three kinds of entry: an ``int`` is a fixed size, checked on every call; a ``str`` names a dynamic axis (``"batch"``,
``"frames"``), which changes from call to call; ``None`` is a fixed width whose size depends on the preset (the
model width of the s2t decoder's ``encoder_out``: 64 at ``tiny``, 256 at ``base``), so the catalog cannot state it. ``input_shapes``
states it.
"""

from __future__ import annotations

import numpy as np

from speechperf.zoo.catalog import get_model


def example_inputs(
    model: str, component: str, preset: str = "tiny", batch: int = 2, length: int | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """Seeded example inputs of one component of a reference model (``speechperf zoo list`` names them): ``batch``
    items, the longest ``length`` long on the component's time-like axis (frames, samples or tokens; default: the
    middle one of the lengths every format is checked at, which the exporters trace with). Batch 2, not 1: an
    exporter given batch 1 may fix the batch axis to 1. numpy arrays, named and typed as the component's inputs."""
    comp = get_model(model).component(component)
    length = comp.test_lengths[1] if length is None else length
    return get_model(model).example_feeds(component, preset, batch, length, np.random.default_rng(seed))


def input_shapes(model: str, component: str, preset: str = "tiny") -> dict[str, tuple[int | str, ...]]:
    """Each input of one component with its axes stated: an ``int`` for a fixed size (a ``None`` width of the
    catalog resolved for ``preset``), the axis name for a dynamic one (``("batch", "frames", 80)``)."""
    comp = get_model(model).component(component)
    feeds = example_inputs(model, component, preset)
    shapes: dict[str, tuple[int | str, ...]] = {}
    for info in comp.inputs:
        declared = info.shape if info.shape is not None else (None,) * feeds[info.name].ndim
        shapes[info.name] = tuple(
            size if isinstance(size, str) else int(feeds[info.name].shape[axis]) for axis, size in enumerate(declared)
        )
    return shapes
