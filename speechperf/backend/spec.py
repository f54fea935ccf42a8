"""What a backend is asked to load (``ModelSpec``) and what a session's inputs and outputs are (``TensorInfo``)."""

from __future__ import annotations

import importlib
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import ModelFileError


def _optional_path(value: Any) -> Path | None:
    return None if value is None else Path(value)


@attrs.frozen
class TensorInfo:
    """One input or output of a session.

    ``dtype`` is a numpy dtype name (``"float32"``), or None where the model file does not say.
    ``shape`` has one entry per axis: an int for a fixed size, a str (the axis name) or None for a dynamic one.
    ``shape`` is None when even the rank is unknown.
    """

    name: str
    dtype: str | None = None
    shape: tuple[int | str | None, ...] | None = attrs.field(
        default=None, converter=lambda s: None if s is None else tuple(s)
    )


@attrs.frozen
class ModelSpec:
    """What a backend should load.

    The format is inferred from the file suffix unless ``format`` is given. ``factory`` (``"module:callable"``)
    builds an ``nn.Module`` / ``nn.Layer`` whose weights are read from ``weights``. ``inputs`` / ``outputs``
    declare names (and dtypes) where the model file does not carry them. ``entry`` is the attribute path of the
    submodule to call inside a TorchScript file. ``options`` holds backend-specific settings.
    """

    path: Path | None = attrs.field(default=None, converter=_optional_path)
    format: str | None = None
    factory: str | None = None
    factory_kwargs: Mapping[str, Any] = attrs.field(factory=dict)
    weights: Path | None = attrs.field(default=None, converter=_optional_path)
    inputs: tuple[TensorInfo, ...] | None = None
    outputs: tuple[TensorInfo, ...] | None = None
    entry: str | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict)

    def existing(self, path: Path | None, what: str = "model file") -> Path:
        """Return ``path`` if it is a regular file, else raise a one-line error naming it and what it is."""
        if path is None:
            raise ModelFileError(f"no {what} given in the model spec")
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise ModelFileError(f"{what} not found: {path}") from None
        except OSError as exc:
            raise ModelFileError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
        if stat.S_ISDIR(mode):  # said here: a framework would say "Protobuf parsing failed" or worse
            raise ModelFileError(f"{what} {path} is a folder; give the model file itself")
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise ModelFileError(f"{what} {path} is {kind}, not a regular file")
        return path

    def build_from_factory(self) -> Any:
        """Call ``factory`` (``"package.module:callable"``) with ``factory_kwargs``; the module is the user's code."""
        module_name, _, attr = (self.factory or "").partition(":")
        if not module_name or not attr:
            raise ModelFileError(f"factory must look like 'package.module:callable', got {self.factory!r}")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ModelFileError(f"cannot import factory {self.factory!r}: {exc}") from None
        return factory(**dict(self.factory_kwargs))

    def output_names(self, default: list[str]) -> list[str]:
        return [t.name for t in self.outputs] if self.outputs else default
