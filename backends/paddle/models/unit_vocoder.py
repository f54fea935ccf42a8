"""CodeHiFiGAN-like unit vocoder in paddle, the twin of ``backends/torch/models/unit_vocoder.py``.

Sizes are in ``speechperf.zoo.unit_vocoder``; weights come from the torch definition.
"""

from __future__ import annotations

from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.models.mel_vocoder import Generator
from speechperf.backends.paddle.models.tts import VariancePredictor

paddle = import_paddle()
from paddle import nn  # noqa: E402


class CodeHiFiGAN(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.embedding = nn.Embedding(hp.num_units, hp.embedding_dim)
        self.duration_predictor = VariancePredictor(hp.embedding_dim, hp.predictor_dim, hp.predictor_kernel)
        self.generator = Generator(hp.embedding_dim, hp)

    def durations(self, units):
        return self.duration_predictor(self.embedding(units))

    def synthesize(self, units):
        return self.generator(self.embedding(units).transpose([0, 2, 1]))


class Duration(nn.Layer):
    def __init__(self, model: CodeHiFiGAN):
        super().__init__()
        self.model = model

    def forward(self, units):
        return (self.model.durations(units),)


class GeneratorComponent(nn.Layer):
    def __init__(self, model: CodeHiFiGAN):
        super().__init__()
        self.model = model

    def forward(self, units):
        return (self.model.synthesize(units),)


def build(hp) -> dict:
    model = CodeHiFiGAN(hp)
    model.eval()
    components = {"duration": Duration(model), "generator": GeneratorComponent(model)}
    for component in components.values():
        component.eval()
    return components
