"""paddle S2T: the same model as ``speechperf.backends.torch.models.s2t``."""

from __future__ import annotations

import math

from speechperf.backends.paddle.models.layers import (
    EncoderLayer,
    F,
    TransformerDecoder,
    frame_mask,
    nn,
    padding_bias,
    positions,
    sinusoidal,
)


class Conv1dSubsampler(nn.Layer):
    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, masked: bool = True):
        super().__init__()
        self.masked = masked
        self.conv_layers = nn.LayerList(
            [
                nn.Conv1D(in_channels, mid_channels, 5, stride=2, padding=2),
                nn.Conv1D(mid_channels // 2, out_channels * 2, 5, stride=2, padding=2),
            ]
        )

    def forward(self, features, lengths):
        x = features.transpose([0, 2, 1])
        for conv in self.conv_layers:
            x = F.glu(conv(x), axis=1)
            lengths = (lengths - 1) // 2 + 1
            if self.masked:
                x = x * frame_mask(x.transpose([0, 2, 1]), lengths).unsqueeze(1)
        return x.transpose([0, 2, 1]), lengths


class SpeechSeq2Seq(nn.Layer):
    def __init__(self, hp):
        super().__init__()
        self.d_model = hp.d_model
        self.subsample = Conv1dSubsampler(hp.num_mel_bins, hp.conv_channels, hp.d_model, hp.subsampler_masks)
        self.encoder_layers = nn.LayerList(
            [EncoderLayer(hp.d_model, hp.heads, hp.ffn) for _ in range(hp.encoder_layers)]
        )
        self.encoder_layer_norm = nn.LayerNorm(hp.d_model)
        self.ctc_proj = nn.Linear(hp.d_model, hp.vocab_size) if hp.ctc else None
        self.decoder = TransformerDecoder(hp.vocab_size, hp.d_model, hp.heads, hp.ffn, hp.decoder_layers)

    def encode(self, features, feature_lengths):
        x, lengths = self.subsample(features, feature_lengths)
        pos = positions(x)
        x = x * math.sqrt(self.d_model) + sinusoidal(pos, self.d_model)
        bias = padding_bias(pos, lengths)
        for layer in self.encoder_layers:
            x = layer(x, bias)
        x = self.encoder_layer_norm(x)
        if self.ctc_proj is None:
            return x, lengths
        return x, self.ctc_proj(x), lengths


class Encoder(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, features, feature_lengths):
        return self.model.encode(features, feature_lengths)


class DecoderStep(nn.Layer):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens, encoder_out, encoder_lengths):
        return (self.model.decoder.step(tokens, encoder_out, encoder_lengths),)


def build(hparams) -> dict:
    model = SpeechSeq2Seq(hparams)
    return {"encoder": Encoder(model), "decoder_step": DecoderStep(model)}
