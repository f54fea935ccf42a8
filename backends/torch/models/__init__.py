"""torch definitions of the reference models (``speechperf.zoo``); one module per model, each with
``build(hparams) -> dict[component_name, nn.Module]``. The contract is in ``speechperf.zoo.catalog``.

The paddle definitions in ``speechperf.backends.paddle.models`` use the same parameter names; a parity test fails
if the two drift.
"""

from __future__ import annotations

import importlib

from speechperf.zoo.catalog import definition_module


def build(model: str, hparams) -> dict:
    """The components of ``model`` (a name from the zoo catalog), all sharing one parent module."""
    return importlib.import_module(f"speechperf.backends.torch.models.{definition_module(model)}").build(hparams)


def parent_of(components: dict):
    """The parent module whose ``state_dict()`` holds every component's weights."""
    parents = {id(c.model): c.model for c in components.values()}
    if len(parents) != 1:
        raise ValueError(f"components {sorted(components)} do not share one parent module")
    return next(iter(parents.values()))
