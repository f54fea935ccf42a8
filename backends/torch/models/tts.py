"""FastSpeech2-like acoustic model in torch: token ids -> encoder states + log-durations; regulated states -> mel.

Sizes and the reasons for them are in ``speechperf.zoo.tts``. The paddle twin is ``backends/paddle/models/tts.py``;
parameter names match one to one.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from speechperf.zoo.catalog import PAD


def sinusoids(like: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal position encodings [batch, time, dim] for the time axis of ``like`` [batch, time, ...].

    Positions come from a cumsum over the input, not a fixed-size table, so an exported graph keeps time dynamic.
    """
    positions = torch.cumsum(torch.ones_like(like[:, :, 0], dtype=torch.float32), dim=1) - 1.0
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    angles = positions.unsqueeze(-1) * inv_freq
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        return x.unflatten(-1, (self.heads, self.head_dim)).transpose(1, 2)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (self.head_dim**-0.5)
        if bias is not None:
            scores = scores + bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(context.transpose(1, 2).flatten(2))


class ConvFeedForward(nn.Module):
    """FastSpeech2's position-wise feed-forward: a wide convolution, ReLU, then a 1x1 convolution."""

    def __init__(self, dim: int, hidden: int, kernel: int):
        super().__init__()
        self.conv1 = nn.Conv1d(dim, hidden, kernel, padding=kernel // 2)
        self.conv2 = nn.Conv1d(hidden, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(F.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)


class FFTBlock(nn.Module):
    """Feed-forward Transformer block, post-norm as in FastSpeech2."""

    def __init__(self, dim: int, heads: int, ffn_dim: int, ffn_kernel: int):
        super().__init__()
        self.attention = SelfAttention(dim, heads)
        self.attention_norm = nn.LayerNorm(dim)
        self.ffn = ConvFeedForward(dim, ffn_dim, ffn_kernel)
        self.ffn_norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        x = self.attention_norm(x + self.attention(x, bias))
        return self.ffn_norm(x + self.ffn(x))


class VariancePredictor(nn.Module):
    """Two conv-ReLU-LayerNorm layers and a linear projection to one value per step (FastSpeech2, fairseq)."""

    def __init__(self, dim: int, hidden: int, kernel: int):
        super().__init__()
        self.conv1 = nn.Conv1d(dim, hidden, kernel, padding=(kernel - 1) // 2)
        self.norm1 = nn.LayerNorm(hidden)
        self.conv2 = nn.Conv1d(hidden, hidden, kernel, padding=(kernel - 1) // 2)
        self.norm2 = nn.LayerNorm(hidden)
        self.proj = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(F.relu(self.conv1(x.transpose(1, 2))).transpose(1, 2))
        x = self.norm2(F.relu(self.conv2(x.transpose(1, 2))).transpose(1, 2))
        return self.proj(x).squeeze(-1)


class FastSpeech2(nn.Module):
    """The parent model: every weight of the ``encoder`` and ``decoder`` components."""

    def __init__(self, hp):
        super().__init__()
        self.dim = hp.dim
        self.embedding = nn.Embedding(hp.vocab_size, hp.dim)
        self.encoder_layers = nn.ModuleList(
            FFTBlock(hp.dim, hp.heads, hp.ffn_dim, hp.ffn_kernel) for _ in range(hp.encoder_layers)
        )
        self.duration_predictor = VariancePredictor(hp.dim, hp.predictor_dim, hp.predictor_kernel)
        self.pitch_predictor = VariancePredictor(hp.dim, hp.predictor_dim, hp.predictor_kernel)
        self.energy_predictor = VariancePredictor(hp.dim, hp.predictor_dim, hp.predictor_kernel)
        # FastPitch-style: a predicted scalar contour is embedded by a small convolution and added to the states.
        self.pitch_embedding = nn.Conv1d(1, hp.dim, hp.predictor_kernel, padding=(hp.predictor_kernel - 1) // 2)
        self.energy_embedding = nn.Conv1d(1, hp.dim, hp.predictor_kernel, padding=(hp.predictor_kernel - 1) // 2)
        self.decoder_layers = nn.ModuleList(
            FFTBlock(hp.dim, hp.heads, hp.ffn_dim, hp.ffn_kernel) for _ in range(hp.decoder_layers)
        )
        self.mel_linear = nn.Linear(hp.dim, hp.n_mels)
        channels = [hp.n_mels] + [hp.postnet_dim] * (hp.postnet_layers - 1) + [hp.n_mels]
        self.postnet = nn.ModuleList(
            nn.Conv1d(c_in, c_out, hp.postnet_kernel, padding=(hp.postnet_kernel - 1) // 2)
            for c_in, c_out in zip(channels[:-1], channels[1:])
        )
        self.reset_parameters(hp)

    def reset_parameters(self, hp) -> None:
        # Random weights would predict ~0 frames per token; start near a typical phoneme length instead.
        nn.init.constant_(self.duration_predictor.proj.bias, math.log1p(hp.initial_duration))

    def encode(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # PAD positions are masked out of attention; -1e9 rather than -inf keeps an all-PAD row finite.
        bias = (tokens == PAD).to(torch.float32).unsqueeze(1).unsqueeze(1) * -1e9
        x = self.embedding(tokens)
        x = x + sinusoids(x, self.dim)
        for layer in self.encoder_layers:
            x = layer(x, bias)
        log_durations = self.duration_predictor(x)
        pitch = self.pitch_predictor(x).unsqueeze(1)
        energy = self.energy_predictor(x).unsqueeze(1)
        x = x + self.pitch_embedding(pitch).transpose(1, 2) + self.energy_embedding(energy).transpose(1, 2)
        return x, log_durations

    def decode(self, hidden: torch.Tensor) -> torch.Tensor:
        x = hidden + sinusoids(hidden, self.dim)
        # No mask here: the decoder sees frames only, and the adapter pads them with zeros.
        for layer in self.decoder_layers:
            x = layer(x, None)
        mel = self.mel_linear(x).transpose(1, 2)
        residual = mel
        for i, conv in enumerate(self.postnet):
            residual = conv(residual)
            if i < len(self.postnet) - 1:
                residual = torch.tanh(residual)
        return (mel + residual).transpose(1, 2)


class Encoder(nn.Module):
    def __init__(self, model: FastSpeech2):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.encode(tokens)


class Decoder(nn.Module):
    def __init__(self, model: FastSpeech2):
        super().__init__()
        self.model = model

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model.decode(hidden),)


def build(hp) -> dict[str, nn.Module]:
    model = FastSpeech2(hp).eval()
    return {"encoder": Encoder(model).eval(), "decoder": Decoder(model).eval()}
