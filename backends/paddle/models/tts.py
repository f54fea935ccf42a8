"""FastSpeech2-like acoustic model in paddle, the twin of ``backends/torch/models/tts.py`` (same parameter names).

Weights come from the torch definition through ``speechperf.backends.paddle.weights.load_weights``; so this file
does not initialise anything itself. Sizes are in ``speechperf.zoo.tts``.
"""

from __future__ import annotations

import math

from speechperf.backends.paddle.framework import import_paddle
from speechperf.zoo.catalog import PAD

paddle = import_paddle()
from paddle import nn  # noqa: E402
from paddle.nn import functional as F  # noqa: E402


def sinusoids(like, dim: int):
    """Sinusoidal position encodings [batch, time, dim] from a cumsum over ``like`` [batch, time, ...]."""
    positions = paddle.cumsum(paddle.ones_like(like[:, :, 0], dtype="float32"), axis=1) - 1.0
    inv_freq = paddle.exp(paddle.arange(0, dim, 2, dtype="float32") * (-math.log(10000.0) / dim))
    angles = positions.unsqueeze(-1) * inv_freq
    return paddle.concat([paddle.sin(angles), paddle.cos(angles)], axis=-1)


class SelfAttention(nn.Layer):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def split(self, x):
        # 0 copies the input's size: batch and time stay dynamic in a saved program.
        return x.reshape([0, 0, self.heads, self.head_dim]).transpose([0, 2, 1, 3])

    def forward(self, x, bias):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = paddle.matmul(q, k, transpose_y=True) * (self.head_dim**-0.5)
        if bias is not None:
            scores = scores + bias
        context = paddle.matmul(F.softmax(scores, axis=-1), v)
        return self.out(context.transpose([0, 2, 1, 3]).reshape([0, 0, self.heads * self.head_dim]))


class ConvFeedForward(nn.Layer):
    def __init__(self, dim: int, hidden: int, kernel: int):
        super().__init__()
        self.conv1 = nn.Conv1D(dim, hidden, kernel, padding=kernel // 2)
        self.conv2 = nn.Conv1D(hidden, dim, 1)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x.transpose([0, 2, 1])))).transpose([0, 2, 1])


class FFTBlock(nn.Layer):
    def __init__(self, dim: int, heads: int, ffn_dim: int, ffn_kernel: int):
        super().__init__()
        self.attention = SelfAttention(dim, heads)
        self.attention_norm = nn.LayerNorm(dim)
        self.ffn = ConvFeedForward(dim, ffn_dim, ffn_kernel)
        self.ffn_norm = nn.LayerNorm(dim)

    def forward(self, x, bias):
        x = self.attention_norm(x + self.attention(x, bias))
        return self.ffn_norm(x + self.ffn(x))


class VariancePredictor(nn.Layer):
    def __init__(self, dim: int, hidden: int, kernel: int):
        super().__init__()
        self.conv1 = nn.Conv1D(dim, hidden, kernel, padding=(kernel - 1) // 2)
        self.norm1 = nn.LayerNorm(hidden)
        self.conv2 = nn.Conv1D(hidden, hidden, kernel, padding=(kernel - 1) // 2)
        self.norm2 = nn.LayerNorm(hidden)
        self.proj = nn.Linear(hidden, 1)

    def forward(self, x):
        x = self.norm1(F.relu(self.conv1(x.transpose([0, 2, 1]))).transpose([0, 2, 1]))
        x = self.norm2(F.relu(self.conv2(x.transpose([0, 2, 1]))).transpose([0, 2, 1]))
        return self.proj(x).squeeze(-1)


class FastSpeech2(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.dim = hp.dim
        self.embedding = nn.Embedding(hp.vocab_size, hp.dim)
        self.encoder_layers = nn.LayerList(
            [FFTBlock(hp.dim, hp.heads, hp.ffn_dim, hp.ffn_kernel) for _ in range(hp.encoder_layers)]
        )
        self.duration_predictor = VariancePredictor(hp.dim, hp.predictor_dim, hp.predictor_kernel)
        self.pitch_predictor = VariancePredictor(hp.dim, hp.predictor_dim, hp.predictor_kernel)
        self.energy_predictor = VariancePredictor(hp.dim, hp.predictor_dim, hp.predictor_kernel)
        self.pitch_embedding = nn.Conv1D(1, hp.dim, hp.predictor_kernel, padding=(hp.predictor_kernel - 1) // 2)
        self.energy_embedding = nn.Conv1D(1, hp.dim, hp.predictor_kernel, padding=(hp.predictor_kernel - 1) // 2)
        self.decoder_layers = nn.LayerList(
            [FFTBlock(hp.dim, hp.heads, hp.ffn_dim, hp.ffn_kernel) for _ in range(hp.decoder_layers)]
        )
        self.mel_linear = nn.Linear(hp.dim, hp.n_mels)
        channels = [hp.n_mels] + [hp.postnet_dim] * (hp.postnet_layers - 1) + [hp.n_mels]
        self.postnet = nn.LayerList(
            [
                nn.Conv1D(c_in, c_out, hp.postnet_kernel, padding=(hp.postnet_kernel - 1) // 2)
                for c_in, c_out in zip(channels[:-1], channels[1:])
            ]
        )

    def encode(self, tokens):
        bias = (tokens == PAD).astype("float32").unsqueeze(1).unsqueeze(1) * -1e9
        x = self.embedding(tokens)
        x = x + sinusoids(x, self.dim)
        for layer in self.encoder_layers:
            x = layer(x, bias)
        log_durations = self.duration_predictor(x)
        pitch = self.pitch_predictor(x).unsqueeze(1)
        energy = self.energy_predictor(x).unsqueeze(1)
        x = x + self.pitch_embedding(pitch).transpose([0, 2, 1]) + self.energy_embedding(energy).transpose([0, 2, 1])
        return x, log_durations

    def decode(self, hidden):
        x = hidden + sinusoids(hidden, self.dim)
        for layer in self.decoder_layers:
            x = layer(x, None)
        mel = self.mel_linear(x).transpose([0, 2, 1])
        residual = mel
        last = len(self.postnet) - 1
        for i, conv in enumerate(self.postnet):
            residual = conv(residual)
            if i < last:
                residual = paddle.tanh(residual)
        return (mel + residual).transpose([0, 2, 1])


class Encoder(nn.Layer):
    def __init__(self, model: FastSpeech2):
        super().__init__()
        self.model = model

    def forward(self, tokens):
        return self.model.encode(tokens)


class Decoder(nn.Layer):
    def __init__(self, model: FastSpeech2):
        super().__init__()
        self.model = model

    def forward(self, hidden):
        return (self.model.decode(hidden),)


def build(hp) -> dict:
    model = FastSpeech2(hp)
    model.eval()
    components = {"encoder": Encoder(model), "decoder": Decoder(model)}
    for component in components.values():
        component.eval()
    return components
