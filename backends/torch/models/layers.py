"""Transformer building blocks shared by the torch reference models (parameter names as in fairseq).

Written for export with dynamic batch and time: positions and masks come from the inputs (``cumsum`` of ones),
heads are split with ``unflatten``, and nothing reads a Python int out of a tensor's shape.
"""

from __future__ import annotations

import math

import torch
from torch import nn

#: Added to attention scores of padded or future positions.
MASKED = -1e9


def positions(x: torch.Tensor) -> torch.Tensor:
    """0, 1, 2, ... along axis 1 of ``x`` (batch, time, ...), as float32 (batch, time)."""
    ones = torch.ones_like(x[:, :, 0] if x.dim() == 3 else x, dtype=torch.float32)
    return ones.cumsum(1) - 1.0


def sinusoidal(pos: torch.Tensor, dim: int) -> torch.Tensor:
    """fairseq's sinusoidal position embedding for float positions (batch, time) -> (batch, time, dim)."""
    half = dim // 2
    inv_freq = torch.exp(torch.arange(half, dtype=torch.float32) * (-math.log(10000.0) / (half - 1)))
    angles = pos.unsqueeze(-1) * inv_freq
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


def padding_bias(pos: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(batch, 1, time) additive bias: 0 where position < length, MASKED after."""
    valid = pos < lengths.to(torch.float32).unsqueeze(1)
    return ((~valid).to(torch.float32) * MASKED).unsqueeze(1)


def frame_mask(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(batch, time) float32: 1 where the position along axis 1 of ``x`` is below the item's length, 0 after."""
    return (positions(x) < lengths.to(torch.float32).unsqueeze(1)).to(torch.float32)


def causal_bias(pos: torch.Tensor) -> torch.Tensor:
    """(batch, time, time) additive bias: MASKED where the key comes after the query."""
    future = pos.unsqueeze(1) > pos.unsqueeze(2)
    return future.to(torch.float32) * MASKED


class MultiheadAttention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.scale = (d_model // heads) ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.unflatten(-1, (self.heads, -1)).transpose(1, 2)  # (batch, heads, time, head_dim)

    def forward(self, query: torch.Tensor, key: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        q = self._split(self.q_proj(query)) * self.scale
        k = self._split(self.k_proj(key))
        v = self._split(self.v_proj(key))
        scores = q @ k.transpose(-1, -2) + bias.unsqueeze(1)
        out = scores.softmax(-1) @ v
        return self.out_proj(out.transpose(1, 2).flatten(2))


class EncoderLayer(nn.Module):
    """Pre-LN transformer encoder layer."""

    def __init__(self, d_model: int, heads: int, ffn: int, activation: str = "relu"):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)
        self.activation = nn.GELU() if activation == "gelu" else nn.ReLU()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, bias)
        return x + self.fc2(self.activation(self.fc1(self.final_layer_norm(x))))


class DecoderLayer(nn.Module):
    """Pre-LN transformer decoder layer: causal self-attention, attention to the encoder, FFN."""

    def __init__(self, d_model: int, heads: int, ffn: int):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.encoder_attn = MultiheadAttention(d_model, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, x, self_bias, memory, memory_bias):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, self_bias)
        x = x + self.encoder_attn(self.encoder_attn_layer_norm(x), memory, memory_bias)
        return x + self.fc2(torch.relu(self.fc1(self.final_layer_norm(x))))


class TransformerDecoder(nn.Module):
    """Token embedding (tied to the output projection) + decoder layers; one step scores the next token."""

    def __init__(self, vocab_size: int, d_model: int, heads: int, ffn: int, layers: int):
        super().__init__()
        self.d_model = d_model
        self.embed_tokens = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed_tokens.weight, std=d_model**-0.5)
        self.layers = nn.ModuleList(DecoderLayer(d_model, heads, ffn) for _ in range(layers))
        self.layer_norm = nn.LayerNorm(d_model)

    def step(self, tokens: torch.Tensor, memory: torch.Tensor, memory_lengths: torch.Tensor) -> torch.Tensor:
        """Log-probabilities (batch, vocab) of the token after the prefix ``tokens`` (batch, tokens)."""
        pos = positions(tokens)
        x = self.embed_tokens(tokens) * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        self_bias = causal_bias(pos)
        memory_bias = padding_bias(positions(memory), memory_lengths)
        for layer in self.layers:
            x = layer(x, self_bias, memory, memory_bias)
        last = self.layer_norm(x[:, -1])
        return torch.log_softmax(last @ self.embed_tokens.weight.t(), dim=-1)
