"""HiFi-GAN-like mel vocoder in paddle, the twin of ``backends/torch/models/mel_vocoder.py`` (same parameter names).

``Conv1DTranspose`` stores its weight as [in, out, kernel] in paddle as in torch, so weights transfer unchanged.
Sizes are in ``speechperf.zoo.mel_vocoder``.
"""

from __future__ import annotations

from speechperf.backends.paddle.framework import import_paddle

paddle = import_paddle()
from paddle import nn  # noqa: E402

LRELU_SLOPE = 0.1


def leaky_relu(x, slope: float = 0.01):
    """``F.leaky_relu`` as ``max(x, slope * x)`` (the same values for 0 < slope < 1).

    Paddle 3.3 stores leaky_relu's ``negative_slope`` as a double attribute (Paddle PR #75547); paddle2onnx 2.1.0
    reads it as a float, gets 0 and writes ``LeakyRelu(alpha=0)``, a plain ReLU, into the ONNX file. Two plain ops
    export correctly everywhere.
    """
    return paddle.maximum(x, x * slope)


class ResBlock(nn.Layer):
    def __init__(self, channels: int, kernel: int, dilations: tuple[int, ...]):
        super().__init__()
        self.convs1 = nn.LayerList(
            [nn.Conv1D(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations]
        )
        self.convs2 = nn.LayerList(
            [nn.Conv1D(channels, channels, kernel, padding=(kernel - 1) // 2) for _ in dilations]
        )

    def forward(self, x):
        for conv1, conv2 in zip(self.convs1, self.convs2):
            x = x + conv2(leaky_relu(conv1(leaky_relu(x, LRELU_SLOPE)), LRELU_SLOPE))
        return x


class Generator(nn.Layer):
    def __init__(self, in_channels: int, hp):
        super().__init__()
        self.num_kernels = len(hp.resblock_kernels)
        self.conv_pre = nn.Conv1D(in_channels, hp.channels, 7, padding=3)
        self.ups = nn.LayerList()
        self.resblocks = nn.LayerList()
        channels = hp.channels
        for rate, kernel in zip(hp.upsample_rates, hp.upsample_kernels):
            self.ups.append(nn.Conv1DTranspose(channels, channels // 2, kernel, rate, padding=(kernel - rate) // 2))
            channels //= 2
            for k, dilations in zip(hp.resblock_kernels, hp.resblock_dilations):
                self.resblocks.append(ResBlock(channels, k, tuple(dilations)))
        self.conv_post = nn.Conv1D(channels, 1, 7, padding=3)

    def forward(self, x):
        x = self.conv_pre(x)
        for i, up in enumerate(self.ups):
            x = up(leaky_relu(x, LRELU_SLOPE))
            first = i * self.num_kernels
            total = self.resblocks[first](x)
            for j in range(first + 1, first + self.num_kernels):
                total = total + self.resblocks[j](x)
            x = total / self.num_kernels
        x = paddle.tanh(self.conv_post(leaky_relu(x)))
        return x.squeeze(1)


class MelVocoder(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.generator = Generator(hp.n_mels, hp)

    def forward(self, mel):
        return self.generator(mel.transpose([0, 2, 1]))


class GeneratorComponent(nn.Layer):
    def __init__(self, model: MelVocoder):
        super().__init__()
        self.model = model

    def forward(self, mel):
        return (self.model(mel),)


def build(hp) -> dict:
    model = MelVocoder(hp)
    model.eval()
    component = GeneratorComponent(model)
    component.eval()
    return {"generator": component}
