"""paddle unit extractor: the same model as ``speechperf.backends.torch.models.unit_extractor``."""

from __future__ import annotations

from speechperf.backends.paddle.models.layers import EncoderLayer, F, nn, padding_bias, paddle, positions, sinusoidal
from speechperf.zoo.unit_extractor import CONV_LAYERS


class ConvBlock(nn.Layer):
    def __init__(self, in_channels: int, out_channels: int, kernel: int, stride: int):
        super().__init__()
        self.conv = nn.Conv1D(in_channels, out_channels, kernel, stride=stride, bias_attr=False)
        self.layer_norm = nn.LayerNorm(out_channels)

    def forward(self, x):
        x = self.layer_norm(self.conv(x).transpose([0, 2, 1])).transpose([0, 2, 1])
        return F.gelu(x)


class UnitExtractor(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        channels = [1] + [hp.conv_channels] * len(CONV_LAYERS)
        self.conv_layers = nn.LayerList(
            [ConvBlock(channels[i], channels[i + 1], k, s) for i, (k, s) in enumerate(CONV_LAYERS)]
        )
        self.post_extract_proj = nn.Linear(hp.conv_channels, hp.d_model)
        self.layers = nn.LayerList(
            [EncoderLayer(hp.d_model, hp.heads, hp.ffn, activation="gelu") for _ in range(hp.layers)]
        )
        self.layer_norm = nn.LayerNorm(hp.d_model)
        self.register_buffer("codebook", paddle.zeros([hp.num_units, hp.d_model]), persistable=True)

    def encode(self, waveform, waveform_lengths):
        x = waveform.unsqueeze(1)
        lengths = waveform_lengths
        for block, (kernel, stride) in zip(self.conv_layers, CONV_LAYERS):
            x = block(x)
            lengths = (lengths - kernel) // stride + 1
        x = self.post_extract_proj(x.transpose([0, 2, 1]))
        pos = positions(x)
        x = x + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, lengths)
        for layer in self.layers:
            x = layer(x, bias)
        return self.layer_norm(x), lengths


class Encoder(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, waveform, waveform_lengths):
        return self.model.encode(waveform, waveform_lengths)


def build(hparams) -> dict:
    return {"encoder": Encoder(UnitExtractor(hparams))}
