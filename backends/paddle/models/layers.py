"""Transformer building blocks shared by the paddle reference models; the same names and maths as
``speechperf.backends.torch.models.layers``.

Written for ``paddle.jit.save`` with dynamic batch and time: ``reshape`` with 0 (keep this axis) and -1, positions
and masks from ``cumsum`` of ones, never a Python int read from a shape.
"""

from __future__ import annotations

import math

from speechperf.backends.paddle.framework import import_paddle

paddle = import_paddle()
from paddle import nn  # noqa: E402
from paddle.nn import functional as F  # noqa: E402

MASKED = -1e9


def positions(x):
    """0, 1, 2, ... along axis 1 of ``x`` (batch, time, ...), as float32 (batch, time)."""
    ones = paddle.ones_like(x[:, :, 0] if x.ndim == 3 else x, dtype="float32")
    return paddle.cumsum(ones, axis=1) - 1.0


def sinusoidal(pos, dim: int):
    half = dim // 2
    inv_freq = paddle.exp(paddle.arange(half, dtype="float32") * (-math.log(10000.0) / (half - 1)))
    angles = pos.unsqueeze(-1) * inv_freq
    return paddle.concat([paddle.sin(angles), paddle.cos(angles)], axis=-1)


def padding_bias(pos, lengths):
    valid = pos < lengths.astype("float32").unsqueeze(1)
    return ((~valid).astype("float32") * MASKED).unsqueeze(1)


def frame_mask(x, lengths):
    """(batch, time) float32: 1 where the position along axis 1 of ``x`` is below the item's length, 0 after."""
    return (positions(x) < lengths.astype("float32").unsqueeze(1)).astype("float32")


def causal_bias(pos):
    future = pos.unsqueeze(1) > pos.unsqueeze(2)
    return future.astype("float32") * MASKED


class MultiheadAttention(nn.Layer):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.d_model = d_model
        self.scale = (d_model // heads) ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _split(self, x):
        return x.reshape([0, 0, self.heads, -1]).transpose([0, 2, 1, 3])

    def forward(self, query, key, bias):
        q = self._split(self.q_proj(query)) * self.scale
        k = self._split(self.k_proj(key))
        v = self._split(self.v_proj(key))
        scores = paddle.matmul(q, k, transpose_y=True) + bias.unsqueeze(1)
        out = paddle.matmul(F.softmax(scores, axis=-1), v)
        return self.out_proj(out.transpose([0, 2, 1, 3]).reshape([0, 0, self.d_model]))


class EncoderLayer(nn.Layer):
    def __init__(self, d_model: int, heads: int, ffn: int, activation: str = "relu"):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)
        self.activation = nn.GELU() if activation == "gelu" else nn.ReLU()

    def forward(self, x, bias):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, bias)
        return x + self.fc2(self.activation(self.fc1(self.final_layer_norm(x))))


class DecoderLayer(nn.Layer):
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
        return x + self.fc2(F.relu(self.fc1(self.final_layer_norm(x))))


class TransformerDecoder(nn.Layer):
    def __init__(self, vocab_size: int, d_model: int, heads: int, ffn: int, layers: int):
        super().__init__()
        self.d_model = d_model
        self.embed_tokens = nn.Embedding(vocab_size, d_model)
        self.layers = nn.LayerList([DecoderLayer(d_model, heads, ffn) for _ in range(layers)])
        self.layer_norm = nn.LayerNorm(d_model)

    def step(self, tokens, memory, memory_lengths):
        pos = positions(tokens)
        x = self.embed_tokens(tokens) * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        self_bias = causal_bias(pos)
        memory_bias = padding_bias(positions(memory), memory_lengths)
        for layer in self.layers:
            x = layer(x, self_bias, memory, memory_bias)
        last = self.layer_norm(x[:, -1])
        return F.log_softmax(paddle.matmul(last, self.embed_tokens.weight, transpose_y=True), axis=-1)
