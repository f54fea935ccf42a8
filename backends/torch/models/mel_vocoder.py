"""HiFi-GAN-like mel vocoder in torch: mel [batch, frames, n_mels] -> waveform [batch, frames * hop].

The generator is HiFi-GAN's (Kong et al. 2020) with ResBlock1 multi-receptive-field fusion, without weight norm:
weight norm is a training-time reparametrisation that inference folds away, and leaving it out keeps the parameter
names and layouts plain in both frameworks. Sizes are in ``speechperf.zoo.mel_vocoder``. The paddle twin is
``backends/paddle/models/mel_vocoder.py``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

#: HiFi-GAN's LeakyReLU slope inside the generator.
LRELU_SLOPE = 0.1


class ResBlock(nn.Module):
    """HiFi-GAN ResBlock1: per dilation, a dilated conv then a plain conv, each after a LeakyReLU, plus a skip."""

    def __init__(self, channels: int, kernel: int, dilations: tuple[int, ...]):
        super().__init__()
        self.convs1 = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations
        )
        self.convs2 = nn.ModuleList(nn.Conv1d(channels, channels, kernel, padding=(kernel - 1) // 2) for _ in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv1, conv2 in zip(self.convs1, self.convs2):
            x = x + conv2(F.leaky_relu(conv1(F.leaky_relu(x, LRELU_SLOPE)), LRELU_SLOPE))
        return x


class Generator(nn.Module):
    """[batch, in_channels, frames] -> [batch, frames * prod(upsample_rates)]."""

    def __init__(self, in_channels: int, hp):
        super().__init__()
        self.num_kernels = len(hp.resblock_kernels)
        self.conv_pre = nn.Conv1d(in_channels, hp.channels, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        channels = hp.channels
        for rate, kernel in zip(hp.upsample_rates, hp.upsample_kernels):
            # padding (k - u) / 2 makes each layer's output exactly `rate` times longer than its input.
            self.ups.append(nn.ConvTranspose1d(channels, channels // 2, kernel, rate, padding=(kernel - rate) // 2))
            channels //= 2
            for k, dilations in zip(hp.resblock_kernels, hp.resblock_dilations):
                self.resblocks.append(ResBlock(channels, k, tuple(dilations)))
        self.conv_post = nn.Conv1d(channels, 1, 7, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_pre(x)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            blocks = self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]
            x = sum(block(x) for block in blocks) / self.num_kernels
        # HiFi-GAN uses the default slope (0.01) before the output conv.
        x = torch.tanh(self.conv_post(F.leaky_relu(x)))
        return x.squeeze(1)


class MelVocoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.generator = Generator(hp.n_mels, hp)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.generator(mel.transpose(1, 2))


class GeneratorComponent(nn.Module):
    def __init__(self, model: MelVocoder):
        super().__init__()
        self.model = model

    def forward(self, mel: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model(mel),)


def build(hp) -> dict[str, nn.Module]:
    model = MelVocoder(hp).eval()
    return {"generator": GeneratorComponent(model).eval()}
