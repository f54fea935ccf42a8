"""paddle Marian tiny (``speechperf.zoo.marian``): the same parameter names and maths as
``speechperf.backends.torch.models.marian``."""

from __future__ import annotations

import math

from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.models.layers import MultiheadAttention, padding_bias, positions
from speechperf.backends.paddle.models.mt import Encoder

paddle = import_paddle()
from paddle import nn  # noqa: E402
from paddle.nn import functional as F  # noqa: E402

EPS = 1e-6  # Marian's layer norm


def sinusoidal(pos, dim: int):
    """``layers.sinusoidal`` as one sine over [angles, angles + pi/2] (cos x = sin(x + pi/2)), as the torch
    definition computes it. Measured on paddle 3.3.1: with sin and cos of one tensor, the inference predictor
    computes the cos half from the sin's output (as if sin had run in place), in the decoder step; paddle eager,
    paddle.jit.load and the ONNX export are right, and a single sine is right everywhere."""
    half = dim // 2
    inv_freq = paddle.exp(paddle.arange(half, dtype="float32") * (-math.log(10000.0) / (half - 1)))
    phase = paddle.concat([paddle.zeros([half], dtype="float32"), paddle.full([half], math.pi / 2, dtype="float32")])
    return paddle.sin(pos.unsqueeze(-1) * paddle.concat([inv_freq, inv_freq]) + phase)


class FFN(nn.Layer):
    def __init__(self, d: int, ffn: int):
        super().__init__()
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.ffn_norm = nn.LayerNorm(d, epsilon=EPS)

    def ffn(self, x):
        return self.ffn_norm(x + self.fc2(F.relu(self.fc1(x))))


class EncoderLayer(FFN):
    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__(d, ffn)
        self.self_attn = MultiheadAttention(d, heads)
        self.self_attn_norm = nn.LayerNorm(d, epsilon=EPS)

    def forward(self, x, bias):
        return self.ffn(self.self_attn_norm(x + self.self_attn(x, x, bias)))


class DecoderLayer(FFN):
    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__(d, ffn)
        self.rnn_x = nn.Linear(d, d, bias_attr=False)
        self.rnn_forget = nn.Linear(d, d)
        self.rnn_norm = nn.LayerNorm(d, epsilon=EPS)
        self.context = MultiheadAttention(d, heads)
        self.context_norm = nn.LayerNorm(d, epsilon=EPS)

    def forward(self, x, state, memory, memory_bias):
        forget = F.sigmoid(self.rnn_forget(x[:, 0]))
        cell = forget * state + (1.0 - forget) * self.rnn_x(x[:, 0])
        x = self.rnn_norm(x + F.relu(cell).unsqueeze(1))
        x = self.context_norm(x + self.context(x, memory, memory_bias))
        return self.ffn(x), cell


class Marian(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        self.embed = nn.Embedding(hp.vocab_size, hp.d_model)
        self.output_bias = self.create_parameter([hp.vocab_size], default_initializer=nn.initializer.Constant(0.0))
        self.encoder = nn.LayerList([EncoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.encoder_layers)])
        self.decoder = nn.LayerList([DecoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.decoder_layers)])

    def encode(self, src_tokens, src_lengths):
        pos = positions(src_tokens)
        x = self.embed(src_tokens) * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, src_lengths)
        for layer in self.encoder:
            x = layer(x, bias)
        return x, paddle.maximum(src_lengths, paddle.ones_like(src_lengths))

    def step(self, tokens, positions_, state, encoder_out, encoder_lengths):
        pos = positions_.astype("float32").unsqueeze(1)
        started = (pos > 0.0).astype("float32").unsqueeze(-1)  # the first step reads a zero embedding
        x = self.embed(tokens) * (math.sqrt(self.d_model) * started) + sinusoidal(pos, self.d_model)
        memory_bias = padding_bias(positions(encoder_out), encoder_lengths)
        cells = []
        for i, layer in enumerate(self.decoder):
            x, cell = layer(x, state[i], encoder_out, memory_bias)
            cells.append(cell)
        logits = paddle.matmul(x[:, 0], self.embed.weight, transpose_y=True) + self.output_bias
        # Not F.log_softmax: paddle's CPU kernel floors log-probabilities at about -64.5 (exp underflow).
        return logits - paddle.logsumexp(logits, axis=-1, keepdim=True), paddle.stack(cells)


class DecoderStep(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens, positions, state, encoder_out, encoder_lengths):
        return self.model.step(tokens, positions, state, encoder_out, encoder_lengths)


def build(hparams) -> dict:
    model = Marian(hparams)
    return {"encoder": Encoder(model), "decoder_step": DecoderStep(model)}
