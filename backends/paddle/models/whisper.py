"""paddle Whisper (``speechperf.zoo.whisper``): the same parameter names and maths as
``speechperf.backends.torch.models.whisper``."""

from __future__ import annotations

from speechperf.backends.paddle.framework import import_paddle

paddle = import_paddle()
from paddle import nn  # noqa: E402
from paddle.nn import functional as F  # noqa: E402

MASKED = -1e9


def attend(q, k, v, heads: int, bias=None):
    """Scaled dot-product attention over (batch, time, d) tensors split into ``heads``; back to (batch, time, d)."""
    q, k, v = (x.reshape([0, 0, heads, -1]).transpose([0, 2, 1, 3]) for x in (q, k, v))
    scores = paddle.matmul(q, k, transpose_y=True) * (q.shape[-1] ** -0.5)
    if bias is not None:
        scores = scores + bias.unsqueeze(1)
    out = paddle.matmul(F.softmax(scores, axis=-1), v)
    return out.transpose([0, 2, 1, 3]).flatten(2)


class SelfAttention(nn.Layer):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)


class CrossAttention(nn.Layer):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)


class Layer(nn.Layer):
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

    def mlp(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.mlp_ln(x))))


class Encoder(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        d = hp.d_model
        self.conv1 = nn.Conv1D(hp.num_mel_bins, d, 3, padding=1)
        self.conv2 = nn.Conv1D(d, d, 3, stride=2, padding=1)
        self.register_buffer("positions", paddle.zeros([hp.audio_ctx, d]), persistable=True)
        self.layers = nn.LayerList([Layer(d, hp.heads, hp.ffn, cross=False) for _ in range(hp.encoder_layers)])
        self.ln_post = nn.LayerNorm(d)

    def forward(self, features):
        x = F.gelu(self.conv2(F.gelu(self.conv1(features)))).transpose([0, 2, 1])
        x = x + self.positions
        for layer in self.layers:
            q, k, v = paddle.chunk(layer.attn.qkv(layer.attn_ln(x)), 3, axis=-1)
            x = x + layer.attn.out(attend(q, k, v, layer.attn.heads))
            x = layer.mlp(x)
        return self.ln_post(x)


class Decoder(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        d = hp.d_model
        self.token_embedding = nn.Embedding(hp.vocab_size, d)
        self.positions = self.create_parameter([hp.text_ctx, d], default_initializer=nn.initializer.Constant(0.0))
        self.layers = nn.LayerList([Layer(d, hp.heads, hp.ffn, cross=True) for _ in range(hp.decoder_layers)])
        self.ln = nn.LayerNorm(d)

    def cross_kv(self, encoder_out):
        keys, values = [], []
        for layer in self.layers:
            k, v = paddle.chunk(layer.cross.kv(encoder_out), 2, axis=-1)
            keys.append(k)
            values.append(v)
        return paddle.stack(keys), paddle.stack(values)

    def step(self, tokens, self_k, self_v, cross_k, cross_v):
        past = paddle.ones_like(self_k[0, :, :, 0]).sum(1, keepdim=True) - 1.0  # (batch, 1); slot 0 is empty
        query_pos = past + paddle.cumsum(paddle.ones_like(tokens, dtype="float32"), axis=1) - 1.0
        x = self.token_embedding(tokens) + F.embedding(query_pos.astype("int64"), self.positions)
        new_k, new_v = [], []
        for i, layer in enumerate(self.layers):
            q, k, v = paddle.chunk(layer.attn.qkv(layer.attn_ln(x)), 3, axis=-1)
            k = paddle.concat([self_k[i], k], axis=1)
            v = paddle.concat([self_v[i], v], axis=1)
            new_k.append(k)
            new_v.append(v)
            key_pos = paddle.cumsum(paddle.ones_like(k[:, :, 0]), axis=1) - 2.0
            hidden = paddle.logical_or(key_pos.unsqueeze(1) > query_pos.unsqueeze(2), (key_pos < 0).unsqueeze(1))
            bias = hidden.astype("float32") * MASKED
            x = x + layer.attn.out(attend(q, k, v, layer.attn.heads, bias))
            q = layer.cross.query(layer.cross_ln(x))
            x = x + layer.cross.out(attend(q, cross_k[i], cross_v[i], layer.cross.heads))
            x = layer.mlp(x)
        last = self.ln(x[:, -1])
        logits = paddle.matmul(last, self.token_embedding.weight, transpose_y=True)
        return logits, paddle.stack(new_k), paddle.stack(new_v)


class Whisper(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.encoder = Encoder(hp)
        self.decoder = Decoder(hp)


class EncoderGraph(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, features):
        return (self.model.encoder(features),)


class CrossKV(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, encoder_out):
        return self.model.decoder.cross_kv(encoder_out)


class DecoderStep(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens, self_k, self_v, cross_k, cross_v):
        return self.model.decoder.step(tokens, self_k, self_v, cross_k, cross_v)


def build(hparams) -> dict:
    model = Whisper(hparams)
    return {"encoder": EncoderGraph(model), "cross_kv": CrossKV(model), "decoder_step": DecoderStep(model)}
