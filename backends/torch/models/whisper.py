"""torch Whisper (``speechperf.zoo.whisper``): encoder, cross-attention K/V, and a decoder step with a KV cache.

Parameter names mirror CTranslate2's fused layout (one q/k/v matrix per self-attention, one k/v matrix per
cross-attention) so its weights load without reshuffling; the paddle definition uses the same names.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from speechperf.backends.torch.models.module_lists import modules_as

#: Added to the scores of future positions.
MASKED = -1e9


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int, bias=None) -> torch.Tensor:
    """Scaled dot-product attention over (batch, time, d) tensors split into ``heads``; back to (batch, time, d)."""
    q, k, v = (x.unflatten(-1, (heads, -1)).transpose(1, 2) for x in (q, k, v))
    scores = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if bias is not None:
        scores = scores + bias.unsqueeze(1)
    out = torch.matmul(torch.softmax(scores, dim=-1), v)
    return out.transpose(1, 2).flatten(2)


class SelfAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)


class CrossAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)


class Layer(nn.Module):
    """Pre-LN block: self-attention, (decoder) cross-attention, GELU MLP."""

    def __init__(self, d: int, heads: int, ffn: int, cross: bool):
        super().__init__()
        self.attn_ln = nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        if cross:
            self.cross_ln = nn.LayerNorm(d)
            self.cross = CrossAttention(d, heads)
        self.mlp_ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.mlp_ln(x))))


class Encoder(nn.Module):
    positions: torch.Tensor  # a buffer, registered below (torch types an unknown attribute as Tensor | Module)

    def __init__(self, hp):
        super().__init__()
        d = hp.d_model
        self.conv1 = nn.Conv1d(hp.num_mel_bins, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positions", torch.zeros(hp.audio_ctx, d))
        self.layers = nn.ModuleList(Layer(d, hp.heads, hp.ffn, cross=False) for _ in range(hp.encoder_layers))
        self.ln_post = nn.LayerNorm(d)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv2(F.gelu(self.conv1(features)))).transpose(1, 2)
        x = x + self.positions
        for layer in modules_as(self.layers, Layer):
            q, k, v = layer.attn.qkv(layer.attn_ln(x)).chunk(3, dim=-1)
            x = x + layer.attn.out(attend(q, k, v, layer.attn.heads))
            x = layer.mlp(x)
        return self.ln_post(x)


class Decoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        d = hp.d_model
        self.token_embedding = nn.Embedding(hp.vocab_size, d)
        self.positions = nn.Parameter(torch.zeros(hp.text_ctx, d))
        self.layers = nn.ModuleList(Layer(d, hp.heads, hp.ffn, cross=True) for _ in range(hp.decoder_layers))
        self.ln = nn.LayerNorm(d)

    def cross_kv(self, encoder_out: torch.Tensor):
        keys, values = zip(*(layer.cross.kv(encoder_out).chunk(2, dim=-1) for layer in modules_as(self.layers, Layer)))
        return torch.stack(keys), torch.stack(values)

    def step(self, tokens, self_k, self_v, cross_k, cross_v):
        # The cache starts with one masked slot (see speechperf.zoo.whisper); positions continue after the others.
        past = torch.ones_like(self_k[0, :, :, 0]).sum(1, keepdim=True) - 1.0  # (batch, 1)
        query_pos = past + torch.ones_like(tokens, dtype=torch.float32).cumsum(1) - 1.0  # (batch, new)
        x = self.token_embedding(tokens) + F.embedding(query_pos.to(torch.int64), self.positions)
        new_k, new_v = [], []
        for i, layer in enumerate(modules_as(self.layers, Layer)):
            q, k, v = layer.attn.qkv(layer.attn_ln(x)).chunk(3, dim=-1)
            k, v = torch.cat([self_k[i], k], dim=1), torch.cat([self_v[i], v], dim=1)
            new_k.append(k)
            new_v.append(v)
            key_pos = torch.ones_like(k[:, :, 0]).cumsum(1) - 2.0  # (batch, total); the empty slot is -1
            hidden = (key_pos.unsqueeze(1) > query_pos.unsqueeze(2)) | (key_pos < 0).unsqueeze(1)
            bias = hidden.to(torch.float32) * MASKED
            x = x + layer.attn.out(attend(q, k, v, layer.attn.heads, bias))
            q = layer.cross.query(layer.cross_ln(x))
            x = x + layer.cross.out(attend(q, cross_k[i], cross_v[i], layer.cross.heads))
            x = layer.mlp(x)
        last = self.ln(x[:, -1])
        # With a bias, a 2-d linear exports as Gemm(transB=1) over the embedding table itself; without one, as a
        # MatMul with a constant-folded transposed copy (another 80 MB in the ONNX file).
        logits = F.linear(last, self.token_embedding.weight, torch.zeros_like(self.token_embedding.weight[:, 0]))
        return logits, torch.stack(new_k), torch.stack(new_v)


class Whisper(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.encoder = Encoder(hp)
        self.decoder = Decoder(hp)


class EncoderGraph(nn.Module):
    def __init__(self, model: Whisper):
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor):
        return (self.model.encoder(features),)


class CrossKV(nn.Module):
    def __init__(self, model: Whisper):
        super().__init__()
        self.model = model

    def forward(self, encoder_out: torch.Tensor):
        return self.model.decoder.cross_kv(encoder_out)


class DecoderStep(nn.Module):
    def __init__(self, model: Whisper):
        super().__init__()
        self.model = model

    def forward(self, tokens, self_k, self_v, cross_k, cross_v):
        return self.model.decoder.step(tokens, self_k, self_v, cross_k, cross_v)


def build(hparams) -> dict[str, nn.Module]:
    model = Whisper(hparams)
    return {"encoder": EncoderGraph(model), "cross_kv": CrossKV(model), "decoder_step": DecoderStep(model)}
