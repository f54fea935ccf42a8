"""Benchmark configs: the attrs classes, the YAML loader and the generated key reference.

The loader's names are imported when first used (PEP 562), so that importing ``speechperf.config.schema`` (as every
backend's ``options_class`` does, for ``key``) does not import the YAML loader and, through it, the registry.
"""

from speechperf.config.schema import MODEL_TYPES, BenchConfig, GeneralConfig, InputConfig, StageConfig
from speechperf.values import ConfigError

_FROM_LOAD = ("default_config", "load_config", "parse_config", "write_config")

__all__ = [
    "MODEL_TYPES",
    "BenchConfig",
    "ConfigError",
    "GeneralConfig",
    "InputConfig",
    "StageConfig",
    *_FROM_LOAD,
]


def __getattr__(name: str):
    if name in _FROM_LOAD:
        from speechperf.config import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
