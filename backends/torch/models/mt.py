"""torch MT: transformer encoder-decoder over tokens, shared embeddings (``speechperf.zoo.mt``)."""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import nn

from speechperf.backends.torch.models.layers import (
    EncoderLayer,
    TransformerDecoder,
    padding_bias,
    positions,
    sinusoidal,
)
from speechperf.backends.torch.models.s2t import DecoderStep


class TextSeq2Seq(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        self.decoder = TransformerDecoder(hp.vocab_size, hp.d_model, hp.heads, hp.ffn, hp.decoder_layers)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.encoder_layers)
        )
        self.encoder_layer_norm = nn.LayerNorm(hp.d_model)

    def encode(self, src_tokens: torch.Tensor, src_lengths: torch.Tensor):
        pos = positions(src_tokens)
        # The encoder shares the decoder's embedding table (fairseq's share_all_embeddings).
        x = self.decoder.embed_tokens(src_tokens) * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, src_lengths)
        for layer in self.encoder_layers:
            x = layer(x, bias)
        # A computed output (paddle's PIR rejects a pass-through), identical in both frameworks.
        return self.encoder_layer_norm(x), torch.maximum(src_lengths, torch.ones_like(src_lengths))


class Encodes(Protocol):
    """What Encoder needs of a model: TextSeq2Seq here, Marian in ``models.marian``."""

    def encode(self, src_tokens: torch.Tensor, src_lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...


class Encoder(nn.Module):
    def __init__(self, model: Encodes):
        super().__init__()
        self.model = model

    def forward(self, src_tokens: torch.Tensor, src_lengths: torch.Tensor):
        return self.model.encode(src_tokens, src_lengths)


def build(hparams) -> dict[str, nn.Module]:
    model = TextSeq2Seq(hparams)
    return {"encoder": Encoder(model), "decoder_step": DecoderStep(model)}
