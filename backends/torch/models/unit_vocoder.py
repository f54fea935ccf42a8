"""CodeHiFiGAN-like unit vocoder in torch: units -> log-durations; repeated units -> waveform.

As fairseq's ``CodeGenerator``: a unit embedding feeds both a duration predictor and a HiFi-GAN generator; the
repeat between them is numpy (``speechperf.adapters.length``). Sizes are in ``speechperf.zoo.unit_vocoder``. The
paddle twin is ``backends/paddle/models/unit_vocoder.py``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from speechperf.backends.torch.models.mel_vocoder import Generator
from speechperf.backends.torch.models.tts import VariancePredictor


class CodeHiFiGAN(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.embedding = nn.Embedding(hp.num_units, hp.embedding_dim)
        self.duration_predictor = VariancePredictor(hp.embedding_dim, hp.predictor_dim, hp.predictor_kernel)
        self.generator = Generator(hp.embedding_dim, hp)
        # Random weights would predict ~0 repeats per unit; start near the repeat count of de-duplicated units.
        nn.init.constant_(self.duration_predictor.proj.bias, math.log1p(hp.initial_duration))

    def durations(self, units: torch.Tensor) -> torch.Tensor:
        return self.duration_predictor(self.embedding(units))

    def synthesize(self, units: torch.Tensor) -> torch.Tensor:
        return self.generator(self.embedding(units).transpose(1, 2))


class Duration(nn.Module):
    def __init__(self, model: CodeHiFiGAN):
        super().__init__()
        self.model = model

    def forward(self, units: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model.durations(units),)


class GeneratorComponent(nn.Module):
    def __init__(self, model: CodeHiFiGAN):
        super().__init__()
        self.model = model

    def forward(self, units: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model.synthesize(units),)


def build(hp) -> dict[str, nn.Module]:
    model = CodeHiFiGAN(hp).eval()
    return {"duration": Duration(model).eval(), "generator": GeneratorComponent(model).eval()}
