"""Backend ``options``: each backend declares the settings it takes as an attrs class (its ``options_class``).

A stage's ``options`` maps a backend name to that backend's settings, so one config carries settings for every
backend it may run on (``speechperf compare`` runs the same config on several)::

    stage1:
      path: model.onnx
      options:
        onnxruntime: {graph_optimization_level: basic}
        paddle: {api: jit}

The fields of a backend's ``options_class`` are made with ``speechperf.values.key`` and checked by the same
code as every other config key (``speechperf.values``), so a typo or a bad value is one line naming the key, the
backend and what is allowed. The config loader checks a stage's options when it reads the file; ``BackendBase.load``
checks a spec's options again, since a spec may come from elsewhere (a zoo manifest, a caller of the API).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from speechperf.backend.hooks import hooks
from speechperf.errors import SpeechperfError, shorten
from speechperf.values import ConfigError, check_value, suggest


class OptionError(SpeechperfError):
    """A backend option that the backend does not take, or a bad value of one."""


def option_fields(backend) -> tuple[attrs.Attribute, ...]:
    cls = hooks(backend).options_class
    return attrs.fields(cls) if cls is not None else ()


def check_options(backend, options: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """``options`` with every key known to ``backend`` and every value converted and checked."""
    at = where or f"backend {backend.name!r}"
    if not isinstance(options, Mapping):
        raise OptionError(f"{at}: options of backend {backend.name!r} = {shorten(options)}; expected a mapping")
    fields = {f.name: f for f in option_fields(backend)}
    out = {}
    for name, value in options.items():
        if name not in fields:
            allowed = ", ".join(fields) or "none (it takes no options)"
            raise OptionError(
                f"{at}: unknown option {shorten(name)} of backend {backend.name!r}"
                f"{suggest(str(name), list(fields))}; allowed: {allowed}"
            )
        try:
            out[name] = check_value(fields[name], value, f"options.{backend.name}.{name}", at)
        except ConfigError as exc:
            raise OptionError(str(exc)) from None
    return out
