"""A ``ModuleList``'s modules as their own class, for the loops that call their methods or read their fields.

torch types iterating a ModuleList as bare ``nn.Module``s, whose attributes read as ``Tensor | Module``, so
``layer.attn.qkv(x)`` or ``flow.reverse(z)`` over one does not type-check; over this list it does.
"""

from __future__ import annotations

from typing import TypeVar

from torch import nn

M = TypeVar("M", bound=nn.Module)


def modules_as(modules: nn.ModuleList, kind: type[M]) -> list[M]:
    """The modules of ``modules`` in order, each a ``kind`` (a TypeError names the first that is not)."""
    typed = []
    for module in modules:
        if not isinstance(module, kind):
            raise TypeError(f"expected a {kind.__name__} in the ModuleList, found a {type(module).__name__}")
        typed.append(module)
    return typed
