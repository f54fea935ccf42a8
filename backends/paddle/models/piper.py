"""paddle port of Piper's VITS inference path, the twin of ``backends/torch/models/piper.py`` (same parameter names,
same computation; the module docstring there says how it is written). Sizes in ``speechperf.zoo.piper``.

Every weight is a ``Conv1D`` / ``Conv1DTranspose`` / ``Embedding`` weight (same layout as torch) or a plain
parameter, so the torch-layout weights load unchanged.
"""

from __future__ import annotations

import math

from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.models.mel_vocoder import leaky_relu

paddle = import_paddle()
from paddle import nn  # noqa: E402
from paddle.nn import functional as F  # noqa: E402

LRELU_SLOPE = 0.1
MIN_BIN_WIDTH = MIN_BIN_HEIGHT = MIN_DERIVATIVE = 1e-3
SEARCH_EPS = 1e-6
MASKED = -1e4


def _param(layer, shape, value: float):
    return layer.create_parameter(shape, default_initializer=nn.initializer.Constant(value))


def sequence_mask(lengths, like):
    """[B, 1, T] float mask of the first ``lengths`` positions of ``like``'s last axis ([B, C, T] or [B, T])."""
    row = like[:, 0, :] if like.ndim == 3 else like
    positions = paddle.cumsum(row.astype("float32") * 0.0 + 1.0, axis=-1) - 1.0
    return (positions < lengths.astype("float32").unsqueeze(1)).astype("float32").unsqueeze(1)


class ChannelNorm(nn.Layer):
    def __init__(self, channels: int):
        super().__init__()
        self.channels = channels
        self.gamma = _param(self, [channels], 1.0)
        self.beta = _param(self, [channels], 0.0)

    def forward(self, x):
        y = F.layer_norm(x.transpose([0, 2, 1]), [self.channels], self.gamma, self.beta, 1e-5)
        return y.transpose([0, 2, 1])


class RelativeAttention(nn.Layer):
    def __init__(self, channels: int, heads: int, window: int):
        super().__init__()
        self.heads, self.window, self.head_dim = heads, window, channels // heads
        self.conv_q = nn.Conv1D(channels, channels, 1)
        self.conv_k = nn.Conv1D(channels, channels, 1)
        self.conv_v = nn.Conv1D(channels, channels, 1)
        self.conv_o = nn.Conv1D(channels, channels, 1)
        self.emb_rel_k = _param(self, [1, 2 * window + 1, self.head_dim], 0.0)
        self.emb_rel_v = _param(self, [1, 2 * window + 1, self.head_dim], 0.0)

    def split(self, x):  # [B, C, T] -> [B, H, T, C/H]
        return x.reshape([0, self.heads, self.head_dim, -1]).transpose([0, 1, 3, 2])

    def forward(self, x, attn_mask):
        q, k, v = self.split(self.conv_q(x)), self.split(self.conv_k(x)), self.split(self.conv_v(x))
        q = q / math.sqrt(self.head_dim)
        scores = paddle.matmul(q, k, transpose_y=True)
        positions = paddle.cumsum(x[0, 0, :] * 0.0 + 1.0, axis=0)
        relative = positions.unsqueeze(0) - positions.unsqueeze(1)
        offsets = [(relative == float(r - self.window)).astype(x.dtype) for r in range(2 * self.window + 1)]
        rel_logits = paddle.matmul(q, self.emb_rel_k[0], transpose_y=True)
        for r, offset in enumerate(offsets):
            scores = scores + rel_logits[:, :, :, r : r + 1] * offset
        scores = paddle.where(attn_mask > 0, scores, paddle.full_like(scores, MASKED))
        p = F.softmax(scores, axis=-1)
        out = paddle.matmul(p, v)
        rel_weights = paddle.stack([(p * offset).sum(-1) for offset in offsets], axis=-1)
        out = out + paddle.matmul(rel_weights, self.emb_rel_v[0])
        out = out.transpose([0, 1, 3, 2]).reshape([0, self.heads * self.head_dim, -1])
        return self.conv_o(out)


class FFN(nn.Layer):
    def __init__(self, channels: int, filter_channels: int, kernel: int):
        super().__init__()
        self.conv_1 = nn.Conv1D(channels, filter_channels, kernel, padding=kernel // 2)
        self.conv_2 = nn.Conv1D(filter_channels, channels, kernel, padding=kernel // 2)

    def forward(self, x, mask):
        x = F.relu(self.conv_1(x * mask))
        return self.conv_2(x * mask) * mask


class AttentionEncoder(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        n = hp.layers
        self.attn_layers = nn.LayerList([RelativeAttention(hp.hidden, hp.heads, hp.window) for _ in range(n)])
        self.norm_layers_1 = nn.LayerList([ChannelNorm(hp.hidden) for _ in range(n)])
        self.ffn_layers = nn.LayerList([FFN(hp.hidden, hp.filter, hp.kernel) for _ in range(n)])
        self.norm_layers_2 = nn.LayerList([ChannelNorm(hp.hidden) for _ in range(n)])

    def forward(self, x, mask):
        attn_mask = mask.unsqueeze(2) * mask.unsqueeze(-1)
        x = x * mask
        for attn, norm_1, ffn, norm_2 in zip(self.attn_layers, self.norm_layers_1, self.ffn_layers, self.norm_layers_2):
            x = norm_1(x + attn(x, attn_mask))
            x = norm_2(x + ffn(x, mask))
        return x * mask


class TextEncoder(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.hidden = hp.hidden
        self.emb = nn.Embedding(hp.num_symbols, hp.hidden)
        self.encoder = AttentionEncoder(hp)
        self.proj = nn.Conv1D(hp.hidden, 2 * hp.hidden, 1)

    def forward(self, tokens, mask):
        x = (self.emb(tokens) * math.sqrt(self.hidden)).transpose([0, 2, 1])
        x = self.encoder(x * mask, mask)
        means, log_scales = paddle.chunk(self.proj(x) * mask, 2, axis=1)
        return x, means, log_scales


class DDSConv(nn.Layer):
    def __init__(self, channels: int, kernel: int, layers: int):
        super().__init__()
        dilations = [kernel**i for i in range(layers)]
        self.convs_sep = nn.LayerList(
            [
                nn.Conv1D(channels, channels, kernel, groups=channels, dilation=d, padding=(kernel * d - d) // 2)
                for d in dilations
            ]
        )
        self.convs_1x1 = nn.LayerList([nn.Conv1D(channels, channels, 1) for _ in dilations])
        self.norms_1 = nn.LayerList([ChannelNorm(channels) for _ in dilations])
        self.norms_2 = nn.LayerList([ChannelNorm(channels) for _ in dilations])

    def forward(self, x, mask, g=None):
        if g is not None:
            x = x + g
        for sep, one, norm_1, norm_2 in zip(self.convs_sep, self.convs_1x1, self.norms_1, self.norms_2):
            y = F.gelu(norm_1(sep(x * mask)))
            x = x + F.gelu(norm_2(one(y)))
        return x * mask


def softplus(x):
    """``log(1 + exp(x))`` from plain ops: paddle2onnx 2.1.0 reads paddle 3.3's double ``beta`` / ``threshold``
    attributes of ``softplus`` as 0 and refuses the op (as with leaky_relu's slope, see ``mel_vocoder``)."""
    return paddle.maximum(x, paddle.zeros_like(x)) + paddle.log1p(paddle.exp(-paddle.abs(x)))


def _select(values, one_hot):
    return (values * one_hot).sum(-1)


def _edges(unnormalized, bound: float, minimum: float):
    bins = unnormalized.shape[-1]
    sizes = minimum + (1 - minimum * bins) * F.softmax(unnormalized, axis=-1)
    inner = 2 * bound * paddle.cumsum(sizes, axis=-1)[:, :, :, :-1] - bound
    ends = sizes[:, :, :, :1] * 0.0 + bound
    edges = paddle.concat([-ends, inner, ends], axis=-1)
    return edges[:, :, :, 1:] - edges[:, :, :, :-1], edges


def spline_inverse(x, widths, heights, derivatives, bound: float):
    inside = paddle.logical_and(x >= -bound, x <= bound)
    x_in = paddle.clip(x, -bound, bound)
    constant = math.log(math.exp(1 - MIN_DERIVATIVE) - 1)
    ends = derivatives[:, :, :, :1] * 0.0 + constant
    derivatives = MIN_DERIVATIVE + softplus(paddle.concat([ends, derivatives, ends], axis=-1))
    widths, cumwidths = _edges(widths, bound, MIN_BIN_WIDTH)
    heights, cumheights = _edges(heights, bound, MIN_BIN_HEIGHT)
    bins = widths.shape[-1]
    top = paddle.concat([cumheights[:, :, :, :-1] * 0.0, cumheights[:, :, :, :1] * 0.0 + 1.0], axis=-1)
    index = (x_in.unsqueeze(-1) >= cumheights + SEARCH_EPS * top).astype(x.dtype).sum(-1) - 1.0
    one_hot = (paddle.cumsum(widths * 0.0 + 1.0, axis=-1) - 1.0 == index.unsqueeze(-1)).astype(x.dtype)
    cw, bw = _select(cumwidths[:, :, :, :bins], one_hot), _select(widths, one_hot)
    ch, bh = _select(cumheights[:, :, :, :bins], one_hot), _select(heights, one_hot)
    delta = _select(heights / widths, one_hot)
    d0, d1 = _select(derivatives[:, :, :, :bins], one_hot), _select(derivatives[:, :, :, 1:], one_hot)
    shifted = x_in - ch
    curve = d0 + d1 - 2 * delta
    a = shifted * curve + bh * (delta - d0)
    b = bh * d0 - shifted * curve
    c = -delta * shifted
    root = (2 * c) / (-b - paddle.sqrt(b * b - 4 * a * c))
    return paddle.where(inside, root * bw + cw, x)


class ConvFlow(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        f = hp.hidden
        self.bins, self.bound, self.scale = hp.spline_bins, hp.tail_bound, math.sqrt(f)
        self.pre = nn.Conv1D(1, f, 1)
        self.convs = DDSConv(f, hp.dp_kernel, hp.dp_layers)
        self.proj = nn.Conv1D(f, 3 * hp.spline_bins - 1, 1)

    def reverse(self, x, mask, g):
        x0, x1 = x[:, :1], x[:, 1:]
        h = self.proj(self.convs(self.pre(x0), mask, g=g)) * mask
        h = h.reshape([0, 1, 3 * self.bins - 1, -1]).transpose([0, 1, 3, 2])
        n = self.bins
        x1 = spline_inverse(
            x1, h[:, :, :, :n] / self.scale, h[:, :, :, n : 2 * n] / self.scale, h[:, :, :, 2 * n :], self.bound
        )
        return paddle.concat([x0, x1], axis=1) * mask


class ElementwiseAffine(nn.Layer):
    def __init__(self):
        super().__init__()
        self.m = _param(self, [2, 1], 0.0)
        self.inv_scale = _param(self, [2, 1], 1.0)

    def reverse(self, x, mask):
        return (x - self.m) * self.inv_scale * mask


class DurationPredictor(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        f = hp.hidden
        self.pre = nn.Conv1D(f, f, 1)
        self.convs = DDSConv(f, hp.dp_kernel, hp.dp_layers)
        self.proj = nn.Conv1D(f, f, 1)
        self.spline_flows = nn.LayerList([ConvFlow(hp) for _ in range(hp.spline_flows)])
        self.affine = ElementwiseAffine()

    def forward(self, x, mask, noise):
        h = self.proj(self.convs(self.pre(x), mask)) * mask
        z = noise
        for i in range(len(self.spline_flows) - 1, -1, -1):
            z = self.spline_flows[i].reverse(paddle.flip(z, axis=[1]), mask, h)
        z = self.affine.reverse(paddle.flip(z, axis=[1]), mask)
        return z[:, 0, :]


class WN(nn.Layer):
    def __init__(self, hidden: int, kernel: int, layers: int):
        super().__init__()
        self.hidden = hidden
        self.in_layers = nn.LayerList(
            [nn.Conv1D(hidden, 2 * hidden, kernel, padding=kernel // 2) for _ in range(layers)]
        )
        self.res_skip_layers = nn.LayerList(
            [nn.Conv1D(hidden, 2 * hidden if i < layers - 1 else hidden, 1) for i in range(layers)]
        )

    def forward(self, x, mask):
        output = x * 0.0
        last = len(self.in_layers) - 1
        for i, (conv, res_skip) in enumerate(zip(self.in_layers, self.res_skip_layers)):
            h = conv(x)
            acts = paddle.tanh(h[:, : self.hidden]) * F.sigmoid(h[:, self.hidden :])
            rs = res_skip(acts)
            if i < last:
                x = (x + rs[:, : self.hidden]) * mask
                output = output + rs[:, self.hidden :]
            else:
                output = output + rs
        return output * mask


class Coupling(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        half = hp.hidden // 2
        self.half_channels = half  # not `half`: that would hide nn.Layer.half()
        self.pre = nn.Conv1D(half, hp.hidden, 1)
        self.enc = WN(hp.hidden, hp.coupling_kernel, hp.coupling_layers)
        self.post = nn.Conv1D(hp.hidden, half, 1)

    def reverse(self, x, mask):
        x0, x1 = x[:, : self.half_channels], x[:, self.half_channels :]
        mean = self.post(self.enc(self.pre(x0) * mask, mask)) * mask
        return paddle.concat([x0, (x1 - mean) * mask], axis=1)


class Flow(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.couplings = nn.LayerList([Coupling(hp) for _ in range(hp.couplings)])

    def reverse(self, z, mask):
        for i in range(len(self.couplings) - 1, -1, -1):
            z = self.couplings[i].reverse(paddle.flip(z, axis=[1]), mask)
        return z


class ResBlock2(nn.Layer):
    def __init__(self, channels: int, kernel: int, dilations):
        super().__init__()
        self.convs = nn.LayerList(
            [nn.Conv1D(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations]
        )

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(leaky_relu(x, LRELU_SLOPE))
        return x


class Generator(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        c = hp.upsample_initial
        self.kernels = len(hp.resblock_kernels)
        self.conv_pre = nn.Conv1D(hp.hidden, c, 7, padding=3)
        self.ups = nn.LayerList(
            [
                nn.Conv1DTranspose(c // 2**i, c // 2 ** (i + 1), k, u, padding=(k - u) // 2)
                for i, (u, k) in enumerate(zip(hp.upsample_rates, hp.upsample_kernels))
            ]
        )
        self.resblocks = nn.LayerList(
            [
                ResBlock2(c // 2 ** (i + 1), k, d)
                for i in range(len(hp.upsample_rates))
                for k, d in zip(hp.resblock_kernels, hp.resblock_dilations)
            ]
        )
        self.conv_post = nn.Conv1D(c // 2 ** len(hp.upsample_rates), 1, 7, padding=3, bias_attr=False)

    def forward(self, x):
        x = self.conv_pre(x)
        for i, up in enumerate(self.ups):
            x = up(leaky_relu(x, LRELU_SLOPE))
            total = self.resblocks[i * self.kernels](x)
            for j in range(1, self.kernels):
                total = total + self.resblocks[i * self.kernels + j](x)
            x = total / self.kernels
        return paddle.tanh(self.conv_post(leaky_relu(x)))


class Piper(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.enc_p = TextEncoder(hp)
        self.dp = DurationPredictor(hp)
        self.flow = Flow(hp)
        self.dec = Generator(hp)

    def encode(self, tokens, token_lengths, duration_noise):
        mask = sequence_mask(token_lengths, tokens)
        x, means, log_scales = self.enc_p(tokens, mask)
        return means, log_scales, self.dp(x, mask, duration_noise)

    def decode(self, means, log_scales, latent_noise, frame_lengths):
        mask = sequence_mask(frame_lengths, means)
        z = self.flow.reverse(means + latent_noise * paddle.exp(log_scales), mask)
        return self.dec(z * mask)[:, 0, :]


class Encoder(nn.Layer):
    def __init__(self, model: Piper):
        super().__init__()
        self.model = model

    def forward(self, tokens, token_lengths, duration_noise):
        return self.model.encode(tokens, token_lengths, duration_noise)


class Decoder(nn.Layer):
    def __init__(self, model: Piper):
        super().__init__()
        self.model = model

    def forward(self, means, log_scales, latent_noise, frame_lengths):
        return (self.model.decode(means, log_scales, latent_noise, frame_lengths),)


def build(hp) -> dict:
    model = Piper(hp)
    model.eval()
    return {"encoder": Encoder(model), "decoder": Decoder(model)}
