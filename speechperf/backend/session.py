"""``Session``: a loaded model, the inference callable every meter and benchmark class uses.

A dict of host numpy arrays in, a dict of host numpy arrays out, on every backend. Copying to and from the
framework's tensors is part of what a user pays, and keeping it inside the call is what makes numbers from different
backends comparable (see docs/architecture.md, "The Backend contract").
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from speechperf.backend.spec import ModelSpec, TensorInfo
from speechperf.errors import DeclarationError, FeedError


class Session(abc.ABC):
    """A loaded model. Call it with a dict of numpy arrays; it returns a dict of numpy arrays."""

    backend: str
    device: str = "cpu"
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    #: What the session was loaded from, set by ``BackendBase.load``; None where it is not known (a session built
    #: in memory). The FLOP cache keys its counts by the content of these files.
    spec: ModelSpec | None = None

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(self.inputs, feeds)
        return self.run(feeds)

    @abc.abstractmethod
    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on feeds already checked by ``__call__``."""

    def parameter_bytes(self, feeds: Mapping[str, np.ndarray]) -> int | None:
        """Bytes of the weights (parameters and buffers) a call on ``feeds`` reads, for the roofline's lower bound
        on memory traffic (speechperf.meters.roofline); None where the backend cannot tell (the default). Asked once
        per session in the untimed FLOPs pass; an eager session may run ``feeds`` once to see what is used."""
        return None

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]

    def named_outputs(self, values: Sequence[Any]) -> dict[str, Any]:
        """``values`` (what the framework returned, in order) under the declared output names; a model that returns
        more or fewer outputs than declared is one line naming it and both counts, never a silent truncation."""
        values = list(values)
        check_output_count(self.outputs, len(values), self.model_name())
        return dict(zip(self.output_names, values, strict=True))

    def model_name(self) -> str:
        """What the session was loaded from (a file, or a factory), for messages; the backend where not known."""
        spec = self.spec
        if spec is not None and (spec.path or spec.factory):
            return str(spec.path or spec.factory)
        return f"{self.backend} model"

    def __repr__(self) -> str:
        def fmt(ts: tuple[TensorInfo, ...]) -> str:
            return ", ".join(f"{t.name}:{t.dtype or '?'}{list(t.shape) if t.shape is not None else ''}" for t in ts)

        return f"<{type(self).__name__} {self.backend}/{self.device} in({fmt(self.inputs)}) out({fmt(self.outputs)})>"


def check_output_count(declared: Sequence[TensorInfo], returned: int, model: object) -> None:
    """Raise DeclarationError, naming ``model`` and both counts, when it returns another number of outputs than the
    names declared for them (a loader calls it where the file says its count; ``named_outputs`` on every call)."""
    if returned != len(declared):
        names = ", ".join(t.name for t in declared) or "none"
        raise DeclarationError(
            f"{model}: {len(declared)} output(s) declared ({names}) but the model returns {returned}; "
            "declare one name per output it returns, in order"
        )


def check_feeds(inputs: tuple[TensorInfo, ...], feeds: Mapping[str, np.ndarray]) -> None:
    """Raise FeedError, naming the input, for a feed that the session cannot take."""
    expected = [t.name for t in inputs]
    for name in feeds:
        if name not in expected:
            raise FeedError(f"unknown input {name!r}; this session takes: {', '.join(expected)}")
    for info in inputs:
        if info.name not in feeds:
            raise FeedError(f"missing input {info.name!r}; this session takes: {', '.join(expected)}")
        value = feeds[info.name]
        if not isinstance(value, np.ndarray):
            raise FeedError(f"input {info.name!r} is a {type(value).__name__}; a numpy array is required")
        if info.dtype is not None and value.dtype != np.dtype(info.dtype):
            raise FeedError(f"input {info.name!r} has dtype {value.dtype}; expected {info.dtype}")
        if info.shape is None:
            continue
        if value.ndim != len(info.shape):
            raise FeedError(
                f"input {info.name!r} has rank {value.ndim} (shape {value.shape}); "
                f"expected rank {len(info.shape)} {_shape_text(info.shape)}"
            )
        for axis, (size, want) in enumerate(zip(value.shape, info.shape)):
            if isinstance(want, int) and want >= 0 and size != want:
                raise FeedError(
                    f"input {info.name!r} has size {size} on axis {axis}; expected {want} {_shape_text(info.shape)}"
                )
        if value.size == 0:
            raise FeedError(f"input {info.name!r} is empty (shape {value.shape}); a zero-length input cannot be run")


def _shape_text(shape: tuple[int | str | None, ...]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"
