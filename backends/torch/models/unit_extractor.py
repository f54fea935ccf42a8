"""torch unit extractor: HuBERT-like conv feature extractor + transformer (``speechperf.zoo.unit_extractor``)."""

from __future__ import annotations

import torch
from torch import nn

from speechperf.backends.torch.models.layers import EncoderLayer, padding_bias, positions, sinusoidal
from speechperf.zoo.unit_extractor import CONV_LAYERS


class ConvBlock(nn.Module):
    """Conv (no bias) -> LayerNorm over channels -> GELU, as wav2vec 2.0's ``layer_norm`` extractor mode."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int, stride: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel, stride=stride, bias=False)
        self.layer_norm = nn.LayerNorm(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer_norm(self.conv(x).transpose(1, 2)).transpose(1, 2)
        return nn.functional.gelu(x)


class UnitExtractor(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        channels = [1] + [hp.conv_channels] * len(CONV_LAYERS)
        self.conv_layers = nn.ModuleList(
            ConvBlock(channels[i], channels[i + 1], k, s) for i, (k, s) in enumerate(CONV_LAYERS)
        )
        self.post_extract_proj = nn.Linear(hp.conv_channels, hp.d_model)
        self.layers = nn.ModuleList(
            EncoderLayer(hp.d_model, hp.heads, hp.ffn, activation="gelu") for _ in range(hp.layers)
        )
        self.layer_norm = nn.LayerNorm(hp.d_model)
        # k-means centroids over the output features; the assignment is numpy (speechperf.adapters.units).
        self.register_buffer("codebook", torch.randn(hp.num_units, hp.d_model))

    def encode(self, waveform: torch.Tensor, waveform_lengths: torch.Tensor):
        x = waveform.unsqueeze(1)
        lengths = waveform_lengths
        for block, (kernel, stride) in zip(self.conv_layers, CONV_LAYERS):
            x = block(x)
            lengths = torch.div(lengths - kernel, stride, rounding_mode="floor") + 1
        x = self.post_extract_proj(x.transpose(1, 2))
        pos = positions(x)
        x = x + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, lengths)
        for layer in self.layers:
            x = layer(x, bias)
        return self.layer_norm(x), lengths


class Encoder(nn.Module):
    def __init__(self, model: UnitExtractor):
        super().__init__()
        self.model = model

    def forward(self, waveform: torch.Tensor, waveform_lengths: torch.Tensor):
        return self.model.encode(waveform, waveform_lengths)


def build(hparams) -> dict[str, nn.Module]:
    return {"encoder": Encoder(UnitExtractor(hparams))}
