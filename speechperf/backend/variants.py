"""``Variant``: one way a backend can run a model (a zoo format and a set of its options), as it declares them.

A framework has a debug path and a deployment path: torch eager against TorchScript frozen or ``torch.compile``,
paddle eager against its inference predictor with oneDNN, ONNX Runtime at each graph optimisation level. A backend
lists the ways it knows through its ``variants()`` hook (speechperf.backend.hooks.OptionalHooks), each a name, the
zoo format it runs (``torchscript``, ``paddle-inference``; None: the stage's own) and the options it sets
(``{"compile": "default"}``, checked against the backend's ``options_class``). ``speechperf backends`` lists them;
``speechperf compare --best`` measures each on the config's data and keeps each backend's fastest
(docs/compare.md, "Each backend at its best").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


def _frozen_options(options: Mapping[str, Any] | tuple) -> tuple[tuple[str, Any], ...]:
    items = options.items() if isinstance(options, Mapping) else options
    return tuple(sorted((str(k), v) for k, v in items))


@attrs.frozen
class Variant:
    """``name`` (unique within its backend, a word such as ``torchscript-frozen``), the zoo ``format`` it runs
    (None: the stage's own), the backend ``options`` it sets, and ``note``: what it is, for the listing."""

    name: str
    format: str | None = None
    options: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=_frozen_options)
    note: str = ""
    #: "fp32", or "bf16" for a variant that computes in bfloat16 (speechperf tune searches it on a CPU with
    #: AVX-512 BF16 or AMX)
    precision: str = "fp32"

    @property
    def options_dict(self) -> dict[str, Any]:
        return dict(self.options)

    def describe(self) -> str:
        """``torchscript-frozen (torchscript; optimize_for_inference=True)``: the name, format and options."""
        parts = [self.format] if self.format else []
        if self.options:
            parts.append(", ".join(f"{k}={v}" for k, v in self.options))
        return f"{self.name} ({'; '.join(parts)})" if parts else self.name


def check_variants(backend_name: str, variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """``variants`` if their names are unique; a backend that declares one name twice is a bug in the backend."""
    names = [v.name for v in variants]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"backend {backend_name!r} declares variant {repeated[0]!r} more than once")
    return variants
