"""The uniform step profiler: one PaddleSpeech-style option string, every backend, the same summary table.

Framework-free: each backend implements ``StepProfiler`` in ``speechperf.backends.<name>.profiler`` and is reached
through ``get_backend(name).step_profiler(options)``.
"""

from speechperf.profiler.base import ProfilerError, Recorded, StepProfiler
from speechperf.profiler.options import ProfilerOptionError, ProfilerOptions
from speechperf.profiler.summary import OpStat, ProfileSummary, StepTiming, aggregate

__all__ = [
    "OpStat",
    "ProfileSummary",
    "ProfilerError",
    "ProfilerOptionError",
    "ProfilerOptions",
    "Recorded",
    "StepProfiler",
    "StepTiming",
    "aggregate",
]
