"""fairseq's S2ST benchmark classes over stages that any backend runs; see ``core``."""

from speechperf.benchmark.core import (
    CLASSES,
    S2UT,
    BenchmarkingBase,
    Cascaded2StageS2ST,
    Cascaded3StageS2ST,
    Processing,
    SpeechGeneration,
    benchmark_for,
)
from speechperf.benchmark.stage import Stage

__all__ = [
    "CLASSES",
    "BenchmarkingBase",
    "Cascaded2StageS2ST",
    "Cascaded3StageS2ST",
    "Processing",
    "S2UT",
    "SpeechGeneration",
    "Stage",
    "benchmark_for",
]
