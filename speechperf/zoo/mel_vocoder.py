"""Mel vocoder: HiFi-GAN-like, mel [batch, frames, 80] -> waveform [batch, frames * 256].

HiFi-GAN's generator (Kong et al. 2020): a 7-tap input conv, transposed-conv upsampling whose rates multiply to the
hop (256), after each a multi-receptive-field fusion of ResBlock1s, a 7-tap output conv and tanh. Weight norm is
left out (inference folds it). The mel is [batch, frames, 80] like the TTS decoder's output, so the two chain
without a transpose in between; audio is 22.05 kHz (LJSpeech's rate, HiFi-GAN's published models).

Sizes:
- ``tiny``: 32 channels, upsampling 8 x 8 x 4 (kernels 16, 16, 8), one ResBlock1 (kernel 3, dilations 1, 3) per
  stage: ~0.03 M parameters (~0.13 MB); for tests.
- ``base``: HiFi-GAN V2, the small published configuration (0.93 M parameters, 3.7 MB): 128 channels, upsampling
  8 x 8 x 2 x 2 (kernels 16, 16, 4, 4), ResBlock1 kernels 3, 7, 11 with dilations 1, 3, 5. V1 (13.9 M) is the
  quality model, but V2 is what runs on CPU in practice, and it has V1's structure and hop at 1/16 of its cost.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.zoo.catalog import NUM_MEL_BINS, Component, ReferenceModel, item_lengths


@attrs.frozen
class HiFiGANHparams:
    channels: int
    upsample_rates: tuple[int, ...]
    upsample_kernels: tuple[int, ...]
    resblock_kernels: tuple[int, ...]
    resblock_dilations: tuple[tuple[int, ...], ...]
    sample_rate: int = 22050
    n_mels: int = NUM_MEL_BINS

    @property
    def hop(self) -> int:
        """Output samples per input frame."""
        return math.prod(self.upsample_rates)


def mel_feeds(batch: int, length: int, n_mels: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Log-mel-like values (natural-log magnitudes around -5), zero after each item's length."""
    mel = rng.normal(-5.0, 2.0, size=(batch, length, n_mels)).astype(np.float32)
    for i, n in enumerate(item_lengths(batch, length)):
        mel[i, n:] = 0.0
    return {"mel": mel}


MODEL = ReferenceModel(
    name="mel_vocoder",
    task="vocoder",
    description="HiFi-GAN-like generator: transposed-conv upsampling (hop 256) with multi-receptive-field ResBlocks",
    presets={
        "tiny": HiFiGANHparams(
            channels=32,
            upsample_rates=(8, 8, 4),
            upsample_kernels=(16, 16, 8),
            resblock_kernels=(3,),
            resblock_dilations=((1, 3),),
        ),
        "base": HiFiGANHparams(
            channels=128,
            upsample_rates=(8, 8, 2, 2),
            upsample_kernels=(16, 16, 4, 4),
            resblock_kernels=(3, 7, 11),
            resblock_dilations=((1, 3, 5), (1, 3, 5), (1, 3, 5)),
        ),
    },
    components=(
        Component(
            "generator",
            inputs=(TensorInfo("mel", "float32", ("batch", "frames", NUM_MEL_BINS)),),
            outputs=(TensorInfo("waveform", "float32", ("batch", "samples")),),
            test_lengths=(5, 32, 87),
        ),
    ),
    feeds_fn=lambda component, hp, batch, length, rng: mel_feeds(batch, length, hp.n_mels, rng),
)
