"""Benchmark configs: the attrs classes, the YAML loader and the generated key reference."""

from speechperf.config.load import ConfigError, default_config, load_config, parse_config
from speechperf.config.schema import MODEL_TYPES, BenchConfig, GeneralConfig, InputConfig, StageConfig

__all__ = [
    "MODEL_TYPES",
    "BenchConfig",
    "ConfigError",
    "GeneralConfig",
    "InputConfig",
    "StageConfig",
    "default_config",
    "load_config",
    "parse_config",
]
