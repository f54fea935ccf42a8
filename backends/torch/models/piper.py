"""torch port of Piper's VITS inference path (``speechperf.zoo.piper``): text encoder and stochastic duration
predictor in reverse (``encoder``), flow in reverse and HiFi-GAN (``decoder``); the noises are inputs.

Parameter names follow Piper's (``enc_p.*``, ``dp.*``, ``flow.*``, ``dec.*``), with the flows that have weights
renumbered (``dp.spline_flows.i``, ``flow.couplings.i``) and the duration affine flow kept as ``exp(-logs)``
(``dp.affine.inv_scale``), as the ONNX file stores it. Written to export with dynamic batch and time: the relative
positions and masks come from ``cumsum`` of ones, and the two data-dependent gathers of VITS (the relative-position
skew and the spline's bin lookup) are sums over one-hot masks, which every framework and exporter computes alike.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from speechperf.backends.torch.models.module_lists import modules_as

LRELU_SLOPE = 0.1
MIN_BIN_WIDTH = MIN_BIN_HEIGHT = MIN_DERIVATIVE = 1e-3
#: Added to the top bin edge before the bin search, as VITS's ``searchsorted`` does.
SEARCH_EPS = 1e-6
MASKED = -1e4


def sequence_mask(lengths: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """[B, 1, T] float mask of the first ``lengths`` positions of ``like``'s last axis ([B, C, T] or [B, T])."""
    row = like[:, 0, :] if like.dim() == 3 else like
    # Ones computed from the data, never ones_like: the exporter may fold a ones_like to the example's shape.
    positions = (row.to(torch.float32) * 0.0 + 1.0).cumsum(-1) - 1.0
    return (positions < lengths.unsqueeze(1).to(torch.float32)).to(torch.float32).unsqueeze(1)


class ChannelNorm(nn.Module):
    """LayerNorm over the channels of [B, C, T] (VITS ``modules.LayerNorm``)."""

    def __init__(self, channels: int):
        super().__init__()
        self.channels = channels
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return F.layer_norm(x.transpose(1, 2), (self.channels,), self.gamma, self.beta, 1e-5).transpose(1, 2)


class RelativeAttention(nn.Module):
    """Multi-head self-attention with windowed relative-position keys and values (VITS ``MultiHeadAttention``)."""

    def __init__(self, channels: int, heads: int, window: int):
        super().__init__()
        self.heads, self.window = heads, window
        self.conv_q = nn.Conv1d(channels, channels, 1)
        self.conv_k = nn.Conv1d(channels, channels, 1)
        self.conv_v = nn.Conv1d(channels, channels, 1)
        self.conv_o = nn.Conv1d(channels, channels, 1)
        k = channels // heads
        self.emb_rel_k = nn.Parameter(torch.zeros(1, 2 * window + 1, k))
        self.emb_rel_v = nn.Parameter(torch.zeros(1, 2 * window + 1, k))

    def split(self, x):  # [B, C, T] -> [B, H, T, C/H]
        return x.unflatten(1, (self.heads, -1)).transpose(2, 3)

    def forward(self, x, attn_mask):
        q, k, v = self.split(self.conv_q(x)), self.split(self.conv_k(x)), self.split(self.conv_v(x))
        q = q / math.sqrt(q.shape[-1])
        scores = torch.matmul(q, k.transpose(-2, -1))
        positions = (x[0, 0, :] * 0.0 + 1.0).cumsum(0)
        relative = positions.unsqueeze(0) - positions.unsqueeze(1)  # [T, T]: key position - query position
        offsets = [(relative == float(r - self.window)).to(x.dtype) for r in range(2 * self.window + 1)]
        rel_logits = torch.matmul(q, self.emb_rel_k[0].transpose(0, 1))  # [B, H, T, 2w+1]
        for r, offset in enumerate(offsets):
            scores = scores + rel_logits[..., r : r + 1] * offset
        scores = torch.where(attn_mask > 0, scores, torch.full_like(scores, MASKED))
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, v)
        rel_weights = torch.stack([(p * offset).sum(-1) for offset in offsets], dim=-1)  # [B, H, T, 2w+1]
        out = out + torch.matmul(rel_weights, self.emb_rel_v[0])
        return self.conv_o(out.transpose(2, 3).flatten(1, 2))


class FFN(nn.Module):
    def __init__(self, channels: int, filter_channels: int, kernel: int):
        super().__init__()
        self.conv_1 = nn.Conv1d(channels, filter_channels, kernel, padding=kernel // 2)
        self.conv_2 = nn.Conv1d(filter_channels, channels, kernel, padding=kernel // 2)

    def forward(self, x, mask):
        x = torch.relu(self.conv_1(x * mask))
        return self.conv_2(x * mask) * mask


class AttentionEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        n = hp.layers
        self.attn_layers = nn.ModuleList(RelativeAttention(hp.hidden, hp.heads, hp.window) for _ in range(n))
        self.norm_layers_1 = nn.ModuleList(ChannelNorm(hp.hidden) for _ in range(n))
        self.ffn_layers = nn.ModuleList(FFN(hp.hidden, hp.filter, hp.kernel) for _ in range(n))
        self.norm_layers_2 = nn.ModuleList(ChannelNorm(hp.hidden) for _ in range(n))

    def forward(self, x, mask):
        attn_mask = mask.unsqueeze(2) * mask.unsqueeze(-1)
        x = x * mask
        for attn, norm_1, ffn, norm_2 in zip(self.attn_layers, self.norm_layers_1, self.ffn_layers, self.norm_layers_2):
            x = norm_1(x + attn(x, attn_mask))
            x = norm_2(x + ffn(x, mask))
        return x * mask


class TextEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hidden = hp.hidden
        self.emb = nn.Embedding(hp.num_symbols, hp.hidden)
        self.encoder = AttentionEncoder(hp)
        self.proj = nn.Conv1d(hp.hidden, 2 * hp.hidden, 1)

    def forward(self, tokens, mask):
        x = (self.emb(tokens) * math.sqrt(self.hidden)).transpose(1, 2)
        x = self.encoder(x * mask, mask)
        means, log_scales = (self.proj(x) * mask).chunk(2, dim=1)
        return x, means, log_scales


class DDSConv(nn.Module):
    """Dilated depth-separable convolutions (dilations 1, k, k^2, ...) with channel LayerNorm and GELU."""

    def __init__(self, channels: int, kernel: int, layers: int):
        super().__init__()
        dilations = [kernel**i for i in range(layers)]
        self.convs_sep = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, groups=channels, dilation=d, padding=(kernel * d - d) // 2)
            for d in dilations
        )
        self.convs_1x1 = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in dilations)
        self.norms_1 = nn.ModuleList(ChannelNorm(channels) for _ in dilations)
        self.norms_2 = nn.ModuleList(ChannelNorm(channels) for _ in dilations)

    def forward(self, x, mask, g=None):
        if g is not None:
            x = x + g
        for sep, one, norm_1, norm_2 in zip(self.convs_sep, self.convs_1x1, self.norms_1, self.norms_2):
            y = F.gelu(norm_1(sep(x * mask)))
            x = x + F.gelu(norm_2(one(y)))
        return x * mask


def _select(values, one_hot):
    return (values * one_hot).sum(-1)


def _edges(unnormalized, bound: float, minimum: float):
    """Bin sizes and edges of one spline axis over [-bound, bound] (VITS ``rational_quadratic_spline``)."""
    bins = unnormalized.shape[-1]
    sizes = minimum + (1 - minimum * bins) * torch.softmax(unnormalized, dim=-1)
    inner = 2 * bound * torch.cumsum(sizes, dim=-1)[..., :-1] - bound
    ends = sizes[..., :1] * 0.0 + bound
    edges = torch.cat([-ends, inner, ends], dim=-1)
    return edges[..., 1:] - edges[..., :-1], edges


def spline_inverse(x, widths, heights, derivatives, bound: float):
    """Inverse of the unconstrained rational-quadratic spline with linear tails (identity outside the bound)."""
    inside = (x >= -bound) & (x <= bound)
    x_in = torch.clamp(x, -bound, bound)
    constant = math.log(math.exp(1 - MIN_DERIVATIVE) - 1)
    ends = derivatives[..., :1] * 0.0 + constant
    derivatives = MIN_DERIVATIVE + F.softplus(torch.cat([ends, derivatives, ends], dim=-1))
    widths, cumwidths = _edges(widths, bound, MIN_BIN_WIDTH)
    heights, cumheights = _edges(heights, bound, MIN_BIN_HEIGHT)
    bins = widths.shape[-1]
    top = torch.cat([cumheights[..., :-1] * 0.0, cumheights[..., :1] * 0.0 + 1.0], dim=-1)
    index = (x_in.unsqueeze(-1) >= cumheights + SEARCH_EPS * top).to(x.dtype).sum(-1) - 1.0
    one_hot = ((widths * 0.0 + 1.0).cumsum(-1) - 1.0 == index.unsqueeze(-1)).to(x.dtype)
    cw, bw = _select(cumwidths[..., :bins], one_hot), _select(widths, one_hot)
    ch, bh = _select(cumheights[..., :bins], one_hot), _select(heights, one_hot)
    delta = _select(heights / widths, one_hot)
    d0, d1 = _select(derivatives[..., :bins], one_hot), _select(derivatives[..., 1:], one_hot)
    shifted = x_in - ch
    curve = d0 + d1 - 2 * delta
    a = shifted * curve + bh * (delta - d0)
    b = bh * d0 - shifted * curve
    c = -delta * shifted
    root = (2 * c) / (-b - torch.sqrt(b * b - 4 * a * c))
    return torch.where(inside, root * bw + cw, x)


class ConvFlow(nn.Module):
    def __init__(self, hp):
        super().__init__()
        f = hp.hidden
        self.bins, self.bound, self.scale = hp.spline_bins, hp.tail_bound, math.sqrt(f)
        self.pre = nn.Conv1d(1, f, 1)
        self.convs = DDSConv(f, hp.dp_kernel, hp.dp_layers)
        self.proj = nn.Conv1d(f, 3 * hp.spline_bins - 1, 1)

    def reverse(self, x, mask, g):
        x0, x1 = x[:, :1], x[:, 1:]
        h = self.proj(self.convs(self.pre(x0), mask, g=g)) * mask
        h = h.unflatten(1, (1, -1)).permute(0, 1, 3, 2)  # [B, 1, T, 3 bins - 1]
        n = self.bins
        x1 = spline_inverse(x1, h[..., :n] / self.scale, h[..., n : 2 * n] / self.scale, h[..., 2 * n :], self.bound)
        return torch.cat([x0, x1], dim=1) * mask


class ElementwiseAffine(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Parameter(torch.zeros(2, 1))
        self.inv_scale = nn.Parameter(torch.ones(2, 1))

    def reverse(self, x, mask):
        return (x - self.m) * self.inv_scale * mask


class DurationPredictor(nn.Module):
    """VITS's stochastic duration predictor, reverse direction only (the training flows are not in the file)."""

    def __init__(self, hp):
        super().__init__()
        f = hp.hidden
        self.pre = nn.Conv1d(f, f, 1)
        self.convs = DDSConv(f, hp.dp_kernel, hp.dp_layers)
        self.proj = nn.Conv1d(f, f, 1)
        self.spline_flows = nn.ModuleList(ConvFlow(hp) for _ in range(hp.spline_flows))
        self.affine = ElementwiseAffine()

    def forward(self, x, mask, noise):
        h = self.proj(self.convs(self.pre(x), mask)) * mask
        z = noise
        for flow in reversed(modules_as(self.spline_flows, ConvFlow)):
            z = flow.reverse(torch.flip(z, [1]), mask, h)
        z = self.affine.reverse(torch.flip(z, [1]), mask)
        return z[:, 0, :]


class WN(nn.Module):
    def __init__(self, hidden: int, kernel: int, layers: int):
        super().__init__()
        self.hidden = hidden
        self.in_layers = nn.ModuleList(
            nn.Conv1d(hidden, 2 * hidden, kernel, padding=kernel // 2) for _ in range(layers)
        )
        self.res_skip_layers = nn.ModuleList(
            nn.Conv1d(hidden, 2 * hidden if i < layers - 1 else hidden, 1) for i in range(layers)
        )

    def forward(self, x, mask):
        output = x * 0.0
        last = len(self.in_layers) - 1
        for i, (conv, res_skip) in enumerate(zip(self.in_layers, self.res_skip_layers)):
            h = conv(x)
            acts = torch.tanh(h[:, : self.hidden]) * torch.sigmoid(h[:, self.hidden :])
            rs = res_skip(acts)
            if i < last:
                x = (x + rs[:, : self.hidden]) * mask
                output = output + rs[:, self.hidden :]
            else:
                output = output + rs
        return output * mask


class Coupling(nn.Module):
    """Mean-only residual coupling layer, reverse direction."""

    def __init__(self, hp):
        super().__init__()
        half = hp.hidden // 2
        self.half_channels = half  # not `half`: that would hide nn.Module.half()
        self.pre = nn.Conv1d(half, hp.hidden, 1)
        self.enc = WN(hp.hidden, hp.coupling_kernel, hp.coupling_layers)
        self.post = nn.Conv1d(hp.hidden, half, 1)

    def reverse(self, x, mask):
        x0, x1 = x[:, : self.half_channels], x[:, self.half_channels :]
        mean = self.post(self.enc(self.pre(x0) * mask, mask)) * mask
        return torch.cat([x0, (x1 - mean) * mask], dim=1)


class Flow(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.couplings = nn.ModuleList(Coupling(hp) for _ in range(hp.couplings))

    def reverse(self, z, mask):
        for coupling in reversed(modules_as(self.couplings, Coupling)):
            z = coupling.reverse(torch.flip(z, [1]), mask)
        return z


class ResBlock2(nn.Module):
    def __init__(self, channels: int, kernel: int, dilations):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations
        )

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, LRELU_SLOPE))
        return x


class Generator(nn.Module):
    def __init__(self, hp):
        super().__init__()
        c = hp.upsample_initial
        self.kernels = len(hp.resblock_kernels)
        self.conv_pre = nn.Conv1d(hp.hidden, c, 7, padding=3)
        self.ups = nn.ModuleList(
            nn.ConvTranspose1d(c // 2**i, c // 2 ** (i + 1), k, u, padding=(k - u) // 2)
            for i, (u, k) in enumerate(zip(hp.upsample_rates, hp.upsample_kernels))
        )
        self.resblocks = nn.ModuleList(
            ResBlock2(c // 2 ** (i + 1), k, d)
            for i in range(len(self.ups))
            for k, d in zip(hp.resblock_kernels, hp.resblock_dilations)
        )
        self.conv_post = nn.Conv1d(c // 2 ** len(self.ups), 1, 7, padding=3, bias=False)

    def forward(self, x):
        x = self.conv_pre(x)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            blocks = self.resblocks[i * self.kernels : (i + 1) * self.kernels]
            total = blocks[0](x)
            for block in blocks[1:]:
                total = total + block(x)
            x = total / self.kernels
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


class Piper(nn.Module):
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
        z = self.flow.reverse(means + latent_noise * torch.exp(log_scales), mask)
        return self.dec(z * mask)[:, 0, :]


class Encoder(nn.Module):
    def __init__(self, model: Piper):
        super().__init__()
        self.model = model

    def forward(self, tokens, token_lengths, duration_noise):
        return self.model.encode(tokens, token_lengths, duration_noise)


class Decoder(nn.Module):
    def __init__(self, model: Piper):
        super().__init__()
        self.model = model

    def forward(self, means, log_scales, latent_noise, frame_lengths):
        return (self.model.decode(means, log_scales, latent_noise, frame_lengths),)


def build(hp) -> dict[str, nn.Module]:
    model = Piper(hp)
    return {"encoder": Encoder(model), "decoder": Decoder(model)}
