"""torch Marian tiny (``speechperf.zoo.marian``): a post-LN transformer encoder and a decoder step whose
self-attention is an SSRU cell, its state an input and an output of the graph."""

from __future__ import annotations

import math

import torch
from torch import nn

from speechperf.backends.torch.models.layers import MultiheadAttention, padding_bias, positions
from speechperf.backends.torch.models.mt import Encoder

EPS = 1e-6  # Marian's layer norm


def sinusoidal(pos: torch.Tensor, dim: int) -> torch.Tensor:
    """Marian's (and fairseq's) sinusoidal positions, [sin | cos], as one sine over [angles, angles + pi/2]: the
    form the paddle definition needs (its inference predictor mis-runs sin and cos of one tensor)."""
    half = dim // 2
    inv_freq = torch.exp(torch.arange(half, dtype=torch.float32) * (-math.log(10000.0) / (half - 1)))
    phase = torch.cat([torch.zeros(half), torch.full((half,), math.pi / 2)])
    return torch.sin(pos.unsqueeze(-1) * torch.cat([inv_freq, inv_freq]) + phase)


class FFN(nn.Module):
    def __init__(self, d: int, ffn: int):
        super().__init__()
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.ffn_norm = nn.LayerNorm(d, eps=EPS)

    def ffn(self, x: torch.Tensor) -> torch.Tensor:
        # Marian's postprocess "dan": dropout (none at inference), add the residual, layer norm.
        return self.ffn_norm(x + self.fc2(torch.relu(self.fc1(x))))


class EncoderLayer(FFN):
    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__(d, ffn)
        self.self_attn = MultiheadAttention(d, heads)
        self.self_attn_norm = nn.LayerNorm(d, eps=EPS)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return self.ffn(self.self_attn_norm(x + self.self_attn(x, x, bias)))


class DecoderLayer(FFN):
    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__(d, ffn)
        self.rnn_x = nn.Linear(d, d, bias=False)
        self.rnn_forget = nn.Linear(d, d)
        self.rnn_norm = nn.LayerNorm(d, eps=EPS)
        self.context = MultiheadAttention(d, heads)
        self.context_norm = nn.LayerNorm(d, eps=EPS)

    def forward(self, x, state, memory, memory_bias):
        """x (batch, 1, d), state (batch, d) -> (x, new state)."""
        forget = torch.sigmoid(self.rnn_forget(x[:, 0]))
        cell = forget * state + (1.0 - forget) * self.rnn_x(x[:, 0])
        x = self.rnn_norm(x + torch.relu(cell).unsqueeze(1))
        x = self.context_norm(x + self.context(x, memory, memory_bias))
        return self.ffn(x), cell


class Marian(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        self.embed = nn.Embedding(hp.vocab_size, hp.d_model)
        self.output_bias = nn.Parameter(torch.zeros(hp.vocab_size))
        self.encoder = nn.ModuleList(EncoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.decoder_layers))

    def encode(self, src_tokens: torch.Tensor, src_lengths: torch.Tensor):
        pos = positions(src_tokens)
        x = self.embed(src_tokens) * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, src_lengths)
        for layer in self.encoder:
            x = layer(x, bias)
        # A computed output (paddle's PIR rejects a pass-through), identical in both frameworks.
        return x, torch.maximum(src_lengths, torch.ones_like(src_lengths))

    def step(self, tokens, positions_, state, encoder_out, encoder_lengths):
        pos = positions_.to(torch.float32).unsqueeze(1)  # (batch, 1)
        started = (pos > 0.0).to(torch.float32).unsqueeze(-1)  # the first step reads a zero embedding
        x = self.embed(tokens) * (math.sqrt(self.d_model) * started) + sinusoidal(pos, self.d_model)
        memory_bias = padding_bias(positions(encoder_out), encoder_lengths)
        cells = []
        for i, layer in enumerate(self.decoder):
            x, cell = layer(x, state[i], encoder_out, memory_bias)
            cells.append(cell)
        logits = nn.functional.linear(x[:, 0], self.embed.weight, self.output_bias)
        # logits - logsumexp, as the paddle definition must (its log_softmax floors at about -64.5).
        return logits - torch.logsumexp(logits, dim=-1, keepdim=True), torch.stack(cells)


class DecoderStep(nn.Module):
    def __init__(self, model: Marian):
        super().__init__()
        self.model = model

    def forward(self, tokens, positions, state, encoder_out, encoder_lengths):
        return self.model.step(tokens, positions, state, encoder_out, encoder_lengths)


def build(hparams) -> dict[str, nn.Module]:
    model = Marian(hparams)
    return {"encoder": Encoder(model), "decoder_step": DecoderStep(model)}
