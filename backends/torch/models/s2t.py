"""torch S2T: conv subsampler + transformer encoder with CTC head, transformer decoder (``speechperf.zoo.s2t``)."""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import nn

from speechperf.backends.torch.models.layers import (
    EncoderLayer,
    TransformerDecoder,
    frame_mask,
    padding_bias,
    positions,
    sinusoidal,
)


class Conv1dSubsampler(nn.Module):
    """fairseq's: two stride-2 convolutions (kernel 5) with GLU; 4x fewer frames. With ``masked``, the frames past
    each item's length are zeroed after each convolution, so a padded batch gives every item the outputs it gets
    alone (the next convolution's padding reads zeros there, as it does past the end of an unpadded item)."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, masked: bool = True):
        super().__init__()
        self.masked = masked
        self.conv_layers = nn.ModuleList(
            [
                nn.Conv1d(in_channels, mid_channels, 5, stride=2, padding=2),
                nn.Conv1d(mid_channels // 2, out_channels * 2, 5, stride=2, padding=2),
            ]
        )

    def forward(self, features: torch.Tensor, lengths: torch.Tensor):
        x = features.transpose(1, 2)
        for conv in self.conv_layers:
            x = nn.functional.glu(conv(x), dim=1)
            lengths = torch.div(lengths - 1, 2, rounding_mode="floor") + 1
            if self.masked:
                x = x * frame_mask(x.transpose(1, 2), lengths).unsqueeze(1)
        return x.transpose(1, 2), lengths


class SpeechSeq2Seq(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        self.subsample = Conv1dSubsampler(hp.num_mel_bins, hp.conv_channels, hp.d_model, hp.subsampler_masks)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.encoder_layers)
        )
        self.encoder_layer_norm = nn.LayerNorm(hp.d_model)
        self.ctc_proj = nn.Linear(hp.d_model, hp.vocab_size) if hp.ctc else None
        self.decoder = TransformerDecoder(hp.vocab_size, hp.d_model, hp.heads, hp.ffn, hp.decoder_layers)

    def encode(self, features: torch.Tensor, feature_lengths: torch.Tensor):
        x, lengths = self.subsample(features, feature_lengths)
        pos = positions(x)
        x = x * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, lengths)
        for layer in self.encoder_layers:
            x = layer(x, bias)
        x = self.encoder_layer_norm(x)
        if self.ctc_proj is None:
            return x, lengths
        return x, self.ctc_proj(x), lengths


class Encoder(nn.Module):
    def __init__(self, model: SpeechSeq2Seq):
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor, feature_lengths: torch.Tensor):
        return self.model.encode(features, feature_lengths)


class HasDecoder(Protocol):
    """What DecoderStep needs of a model: SpeechSeq2Seq here, TextSeq2Seq in ``models.mt``."""

    decoder: TransformerDecoder


class DecoderStep(nn.Module):
    def __init__(self, model: HasDecoder):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, encoder_out: torch.Tensor, encoder_lengths: torch.Tensor):
        return (self.model.decoder.step(tokens, encoder_out, encoder_lengths),)


def build(hparams) -> dict[str, nn.Module]:
    model = SpeechSeq2Seq(hparams)
    return {"encoder": Encoder(model), "decoder_step": DecoderStep(model)}
