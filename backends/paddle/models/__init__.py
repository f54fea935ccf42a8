"""paddle definitions of the reference models (``speechperf.zoo``); one module per model, each with
``build(hparams) -> dict[component_name, nn.Layer]``. The contract is in ``speechperf.zoo.catalog``.

Parameter names match the torch definitions in ``speechperf.backends.torch.models``, so the torch-layout weights
file loads here through ``speechperf.backends.paddle.weights.load_weights``.
"""

from __future__ import annotations

import importlib

from speechperf.zoo.catalog import definition_module


def build(model: str, hparams) -> dict:
    """The components of ``model`` (a name from the zoo catalog), all sharing one parent layer."""
    return importlib.import_module(f"speechperf.backends.paddle.models.{definition_module(model)}").build(hparams)


def parent_of(components: dict):
    """The parent layer whose ``state_dict()`` holds every component's weights."""
    parents = {id(c.model): c.model for c in components.values()}
    if len(parents) != 1:
        raise ValueError(f"components {sorted(components)} do not share one parent layer")
    return next(iter(parents.values()))
