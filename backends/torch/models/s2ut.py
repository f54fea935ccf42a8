"""torch S2UT: the S2T architecture without the CTC head, decoding units (``speechperf.zoo.s2ut``)."""

from speechperf.backends.torch.models.s2t import build

__all__ = ["build"]
