"""The ``Backend`` protocol: what every framework binding has, and the small value types it answers with.

What a backend *may* have beyond this (optional capabilities, zoo settings, checks) is declared in one place,
``speechperf.backend.hooks.OptionalHooks`` (see docs/architecture.md, "The Backend contract").
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from speechperf.backend.session import Session
from speechperf.backend.spec import ModelSpec

#: Devices a backend may declare. A backend rejects any other name.
KNOWN_DEVICES = ("cpu", "cuda")


@attrs.frozen
class Availability:
    ok: bool
    reason: str = ""
    version: str | None = None


@attrs.frozen
class Capabilities:
    devices: tuple[str, ...] = ("cpu",)
    formats: tuple[str, ...] = ()
    profilers: tuple[str, ...] = ()
    quantization: tuple[str, ...] = ()
    #: ``speechperf optimize``'s pruning methods this backend runs (speechperf.optimize.pruning): the weights are
    #: pruned by the backend that writes the zoo's weights, and this backend's formats built from them.
    pruning: tuple[str, ...] = ()


@runtime_checkable
class Backend(Protocol):
    """A framework binding. Found by name through the ``speechperf.backends`` entry-point group.

    Importing the module that defines a backend must not import its framework; ``availability()`` and ``load()``
    do. Everything else a backend may offer (``step_profiler``, ``count_flops``, ``zoo_formats``,
    ``options_class``, ...) is an optional hook of ``OptionalHooks``; the core reaches those only through
    ``speechperf.backend.hooks.hooks(backend)``, which fills in the documented default of a hook a backend lacks.
    """

    name: str
    extra: str
    capabilities: Capabilities

    def availability(self) -> Availability: ...

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session: ...

    def set_threads(self, n: int) -> None: ...

    def get_threads(self) -> int: ...

    def seed(self, n: int) -> None: ...

    def synchronize(self, device: str = "cpu") -> None: ...

    def install_hint(self) -> str: ...
