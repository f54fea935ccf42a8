"""What the core hands a backend's ``quantize`` hook, and what the hook gives back. Framework-free.

A backend lists its methods in ``Capabilities.quantization``; ``BackendBase.quantize(method, source, out_dir)``
dispatches to ``backends/<name>/quantize.py``. The hook reads the fp32 model from one of ``source.specs`` (the
formats at hand, the one the stage runs first), calibrates on ``source.calibration`` (real feeds recorded while the
fp32 stage ran the benchmark's dataset) and writes the int8 model into ``out_dir``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import ModelSpec
from speechperf.errors import SpeechperfError

Feeds = Mapping[str, np.ndarray]


class QuantizationError(SpeechperfError):
    """A method that cannot be applied to this model; its one-line message goes into the table's status column."""


@attrs.frozen
class QuantizeSource:
    """One fp32 graph to quantize.

    ``name`` names the written files. ``specs`` are the same model in every format this backend has at hand, the
    preferred first; the hook takes the first one its method can read. ``example`` is an input with batch >= 2 to
    export from, so batch stays dynamic (None: the first calibration feed). ``dynamic_axes``: input name ->
    {axis: axis name} of the axes that must stay dynamic.
    """

    name: str
    specs: tuple[ModelSpec, ...]
    calibration: tuple[Feeds, ...]
    example: Feeds | None = None
    dynamic_axes: Mapping[str, Mapping[int, str]] = attrs.field(factory=dict)

    def spec_for(self, formats: tuple[str, ...], method: str, fmt_of) -> ModelSpec:
        """The first spec whose format (``fmt_of(spec)``) is one of ``formats``; else a one-line error."""
        for spec in self.specs:
            if fmt_of(spec) in formats:
                return spec
        have = ", ".join(str(fmt_of(s)) for s in self.specs) or "none"
        raise QuantizationError(
            f"method {method!r} reads a model in format {' or '.join(formats)}; {self.name} is at hand in: {have}"
        )

    @property
    def example_feeds(self) -> Feeds:
        if self.example is not None:
            return self.example
        if not self.calibration:
            raise QuantizationError(f"{self.name}: no calibration feeds were recorded")
        return self.calibration[0]


@attrs.frozen
class QuantizedModel:
    """What a hook wrote: ``files`` (the one a backend loads first, then companions such as ``.pdiparams``),
    its backend ``format`` (as in ``Capabilities.formats``), load ``options`` for its ``ModelSpec`` (e.g. paddle's
    oneDNN int8 predictor) and ``notes`` worth showing the user once (a deprecation, a fallback that was taken)."""

    files: tuple[Path, ...]
    format: str
    options: Mapping[str, object] = attrs.field(factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return self.files[0]
