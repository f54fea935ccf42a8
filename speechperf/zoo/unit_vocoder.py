"""Unit vocoder: CodeHiFiGAN-like, discrete units -> waveform, with a duration predictor.

As fairseq's ``CodeHiFiGANVocoder`` (used by its speech-to-unit translation): a unit embedding feeds a duration
predictor (``duration``: units [batch, units] -> log-durations) and a HiFi-GAN generator (``generator``: units
repeated to 50 Hz frames [batch, frames] -> waveform [batch, frames * 320] at 16 kHz). The repeat between them is
numpy (``speechperf.adapters.length``: ``round(exp(d) - 1)``, at least 1, a bound on the total), the same on every
backend. Unit ids are 0..99, the k-means codes themselves: the S2UT model's output ids carry fairseq's 4 special
symbols first, so a cascade subtracts ``NUM_SPECIAL`` before this model (as fairseq does). Random weights would
predict about 0 repeats; the duration bias starts at ``log(1 + initial_duration)`` (2 repeats, about what
de-duplicated 50 Hz HuBERT units have).

Sizes:
- ``tiny``: unit embedding 16, predictor 16, 32 channels, upsampling 8 x 5 x 8 (kernels 16, 11, 16), one ResBlock1
  (kernel 3, dilations 1, 3) per stage: ~0.02 M parameters (~0.09 MB); for tests.
- ``base``: fairseq's unit HiFi-GAN config (unit embedding 128, upsampling 5 x 4 x 4 x 2 x 2 = hop 320 with kernels
  11, 8, 8, 4, 4, ResBlock1 kernels 3, 7, 11 with dilations 1, 3, 5, duration predictor 128 with kernel 3) at half
  its channels (256 instead of 512): 3.5 M parameters (14 MB) instead of ~14 M. The full width costs ~4x the time
  on CPU for the same structure and hop; 256 is HiFi-GAN V3's width.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.zoo.catalog import Component, ReferenceModel

#: k-means code size of the units this vocoder takes (the S2UT model's code size).
NUM_UNITS = 100


@attrs.frozen
class UnitVocoderHparams:
    embedding_dim: int
    predictor_dim: int
    predictor_kernel: int
    channels: int
    upsample_rates: tuple[int, ...]
    upsample_kernels: tuple[int, ...]
    resblock_kernels: tuple[int, ...]
    resblock_dilations: tuple[tuple[int, ...], ...]
    num_units: int = NUM_UNITS
    sample_rate: int = 16000
    #: Repeats per unit that the untrained duration predictor starts at.
    initial_duration: float = 2.0

    @property
    def hop(self) -> int:
        """Output samples per (repeated) unit frame."""
        return math.prod(self.upsample_rates)


def _feeds(component: str, hp: UnitVocoderHparams, batch: int, length: int, rng: np.random.Generator):
    return {"units": rng.integers(0, hp.num_units, size=(batch, length), dtype=np.int64)}


MODEL = ReferenceModel(
    name="unit_vocoder",
    task="vocoder",
    description="CodeHiFiGAN-like: unit embedding, duration predictor, HiFi-GAN generator (hop 320, 16 kHz)",
    presets={
        "tiny": UnitVocoderHparams(
            embedding_dim=16,
            predictor_dim=16,
            predictor_kernel=3,
            channels=32,
            upsample_rates=(8, 5, 8),
            upsample_kernels=(16, 11, 16),
            resblock_kernels=(3,),
            resblock_dilations=((1, 3),),
        ),
        "base": UnitVocoderHparams(
            embedding_dim=128,
            predictor_dim=128,
            predictor_kernel=3,
            channels=256,
            upsample_rates=(5, 4, 4, 2, 2),
            upsample_kernels=(11, 8, 8, 4, 4),
            resblock_kernels=(3, 7, 11),
            resblock_dilations=((1, 3, 5), (1, 3, 5), (1, 3, 5)),
        ),
    },
    components=(
        Component(
            "duration",
            inputs=(TensorInfo("units", "int64", ("batch", "units")),),
            outputs=(TensorInfo("log_durations", "float32", ("batch", "units")),),
            test_lengths=(3, 11, 25),
        ),
        Component(
            "generator",
            inputs=(TensorInfo("units", "int64", ("batch", "frames")),),
            outputs=(TensorInfo("waveform", "float32", ("batch", "samples")),),
            test_lengths=(4, 21, 50),
        ),
    ),
    feeds_fn=_feeds,
)
