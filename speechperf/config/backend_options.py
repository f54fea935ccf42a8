"""Backend ``options:`` of a stage config: each backend declares the settings it takes as an attrs class.

A stage's ``options`` maps a backend name to that backend's settings, so one config carries settings for every
backend it may run on (``speechperf compare`` runs the same config on several)::

    stage1:
      path: model.onnx
      options:
        onnxruntime: {graph_optimization_level: basic}
        paddle: {api: jit}

The fields of a backend's ``options_class`` are made with ``speechperf.config.schema.key`` and checked by the same
code as every other config key, so a typo or a bad value is one line naming the key, the backend and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from speechperf.errors import SpeechperfError


class OptionError(SpeechperfError):
    """A backend option that the backend does not take, or a bad value of one."""


def option_fields(backend) -> tuple[attrs.Attribute, ...]:
    cls = getattr(backend, "options_class", None)
    return attrs.fields(cls) if cls is not None else ()


def check_options(backend, options: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """``options`` with every key known to ``backend`` and every value converted and checked."""
    from speechperf.config.load import ConfigError, check_value
    from speechperf.config.load import _suggest as suggest

    at = where or f"backend {backend.name!r}"
    if not isinstance(options, Mapping):
        raise OptionError(f"{at}: options of backend {backend.name!r} = {options!r}; expected a mapping")
    fields = {f.name: f for f in option_fields(backend)}
    out = {}
    for name, value in options.items():
        if name not in fields:
            allowed = ", ".join(fields) or "none (it takes no options)"
            raise OptionError(
                f"{at}: unknown option {name!r} of backend {backend.name!r}"
                f"{suggest(str(name), list(fields))}; allowed: {allowed}"
            )
        try:
            out[name] = check_value(fields[name], value, f"options.{backend.name}.{name}", at)
        except ConfigError as exc:
            raise OptionError(str(exc)) from None
    return out


def check_stage_options(options: Mapping[str, Any], at: str, section: str) -> dict[str, dict[str, Any]]:
    """A stage's ``options`` (backend name -> settings), each backend's settings checked by that backend.

    Backends are looked up in the registry, which imports no framework."""
    from speechperf.registry import get_backend

    if not isinstance(options, Mapping):
        raise OptionError(
            f"{at}: {section}.options = {options!r}; expected a mapping of backend name -> options, "
            "e.g. {onnxruntime: {graph_optimization_level: basic}}"
        )
    checked = {}
    for name, settings in options.items():
        try:
            backend = get_backend(str(name))
        except SpeechperfError as exc:  # an unknown or broken backend: one line naming the known ones
            raise OptionError(f"{at}: {section}.options: {exc}") from None
        checked[str(name)] = check_options(backend, settings or {}, f"{at}: {section}.options.{name}")
    return checked
