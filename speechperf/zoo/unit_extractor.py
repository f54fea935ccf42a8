"""Unit extractor: HuBERT-like. A strided conv feature extractor over 16 kHz waveform (320x: 50 frames/s), a
transformer encoder, then nearest-centroid assignment to a k-means codebook of 100 units.

The codebook is a persistent buffer of the model (so it is in the weights file) and is also written as
``unit_extractor/codebook.npy``: the assignment is numpy in ``speechperf.adapters.units``, shared by all backends.

Sizes:
- ``tiny``: conv channels 32, d 64, 2 layers, 2 heads, FFN 128: 0.09 M parameters; for tests.
- ``base``: conv channels 512, d 768, 6 layers, 12 heads, FFN 3072: 47.2 M parameters. This is HuBERT base cut at
  layer 6, which is the layer fairseq's speech-to-unit recipes take the 100-unit k-means features from.
"""

from __future__ import annotations

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.zoo.catalog import Component, ReferenceModel, item_lengths

NUM_UNITS = 100
#: (kernel, stride) of each conv layer, as HuBERT / wav2vec 2.0: 320 samples per frame, receptive field 400.
CONV_LAYERS = ((10, 5), (3, 2), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2))


@attrs.frozen
class UnitExtractorHparams:
    conv_channels: int
    d_model: int
    heads: int
    ffn: int
    layers: int
    num_units: int = NUM_UNITS


def frames_for_samples(samples: np.ndarray | int) -> np.ndarray | int:
    """Frames out of the conv feature extractor (no padding): 0 for fewer than 400 samples."""
    for kernel, stride in CONV_LAYERS:
        samples = (samples - kernel) // stride + 1
    return samples


#: Fewest samples that give one frame.
MIN_SAMPLES = 400


def _feeds(component: str, hp: UnitExtractorHparams, batch: int, length: int, rng: np.random.Generator):
    lengths = np.maximum(item_lengths(batch, length), min(MIN_SAMPLES, length))
    waveform = (0.1 * rng.standard_normal((batch, length))).astype(np.float32)
    for i, n in enumerate(lengths):
        waveform[i, n:] = 0.0
    return {"waveform": waveform, "waveform_lengths": lengths}


MODEL = ReferenceModel(
    name="unit_extractor",
    task="speech-to-unit (self-supervised features + k-means)",
    description="conv feature extractor (320x) + transformer encoder; k-means codebook of 100 units applied in numpy",
    presets={
        "tiny": UnitExtractorHparams(conv_channels=32, d_model=64, heads=2, ffn=128, layers=2),
        "base": UnitExtractorHparams(conv_channels=512, d_model=768, heads=12, ffn=3072, layers=6),
    },
    components=(
        Component(
            "encoder",
            inputs=(
                TensorInfo("waveform", "float32", ("batch", "samples")),
                TensorInfo("waveform_lengths", "int64", ("batch",)),
            ),
            outputs=(
                TensorInfo("features", "float32", ("batch", "frames", None)),
                TensorInfo("feature_lengths", "int64", ("batch",)),
            ),
            test_lengths=(1600, 4000, 8000),
        ),
    ),
    feeds_fn=_feeds,
    artifacts=("codebook",),
    seed=3,
)
