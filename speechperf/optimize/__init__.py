"""``speechperf optimize``: post-training int8 variants of a config's stages against fp32 (see ``run``)."""

from speechperf.optimize.hook import QuantizationError, QuantizedModel, QuantizeSource
from speechperf.optimize.run import OptimizeOptions, run_optimize

__all__ = ["OptimizeOptions", "QuantizationError", "QuantizeSource", "QuantizedModel", "run_optimize"]
