"""A paddle port of the 16 kHz silero VAD network (silero-vad 5.x/6.x, the ``_model`` of ``silero_vad.jit``).

Its parameters carry the names of the TorchScript ``_model``'s state_dict, so the weights exported from that file
(``speechperf.zoo.weights``, through ``TorchBackend.export_weights``) load as they are through ``backends/paddle/weights.py``; nothing here is trained.
The ops follow the TorchScript code (``_model.code`` and its submodules'): a conv1d STFT with a reflect-padded
tail, its magnitude, four conv+ReLU blocks, an LSTM cell whose state the caller carries, and a 1x1 conv + sigmoid.

One call: ``input`` [B, 576] (64 samples of context + 512 new ones), ``state`` [2, B, 128] (h and c)
-> ``output`` [B, 1] speech probability, ``stateN`` [2, B, 128].
"""

from __future__ import annotations

from speechperf.backends.paddle.framework import import_paddle

paddle = import_paddle()
from paddle import nn  # noqa: E402
from paddle.nn import functional as F  # noqa: E402

HIDDEN = 128


class STFTMagnitude(nn.Layer):
    """|STFT| as one strided conv1d with a fixed basis of real rows then imaginary rows (``forward_basis_buffer``)."""

    def __init__(self, filter_length: int = 256, hop_length: int = 128, right_pad: int = 64):
        super().__init__()
        self.filter_length = filter_length
        self.hop_length = hop_length
        self.right_pad = right_pad
        basis = paddle.zeros([filter_length + 2, 1, filter_length], dtype="float32")
        self.register_buffer("forward_basis_buffer", basis, persistable=True)

    def forward(self, x):
        x = F.pad(x.unsqueeze(1), [0, self.right_pad], mode="reflect", data_format="NCL")
        spec = F.conv1d(x, self.forward_basis_buffer, stride=self.hop_length)
        cutoff = self.filter_length // 2 + 1
        real, imag = spec[:, :cutoff], spec[:, cutoff:]
        return paddle.sqrt(real.pow(2) + imag.pow(2))


class EncoderBlock(nn.Layer):
    """Conv1d (kernel 3, padding 1) + ReLU; named ``reparam_conv`` as in the source model."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.reparam_conv = nn.Conv1D(in_channels, out_channels, 3, stride=stride, padding=1)

    def forward(self, x):
        return F.relu(self.reparam_conv(x))


class Decoder(nn.Layer):
    def __init__(self, hidden: int = HIDDEN):
        super().__init__()
        self.rnn = nn.LSTMCell(hidden, hidden)
        # Indices 0..3 keep the source's parameter names (decoder.decoder.2.*); dropout is a no-op in eval.
        self.decoder = nn.Sequential(nn.Dropout(0.1), nn.ReLU(), nn.Conv1D(hidden, 1, 1), nn.Sigmoid())

    def forward(self, x, state):
        h, (h, c) = self.rnn(x.squeeze(-1), (state[0], state[1]))
        return self.decoder(h.unsqueeze(-1)), paddle.stack([h, c])


class SileroVAD16k(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stft = STFTMagnitude()
        self.encoder = nn.Sequential(
            EncoderBlock(129, 128, 1),
            EncoderBlock(128, 64, 2),
            EncoderBlock(64, 64, 2),
            EncoderBlock(64, 128, 1),
        )
        self.decoder = Decoder()

    def forward(self, input, state):
        x = self.encoder(self.stft(input))
        x, state = self.decoder(x, state)
        return x.squeeze(1).mean(axis=1, keepdim=True), state


def build() -> SileroVAD16k:
    """The factory the paddle backend calls (``speechperf.backends.paddle.silero_vad:build``); weights come after."""
    return SileroVAD16k()
