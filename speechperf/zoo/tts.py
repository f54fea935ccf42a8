"""TTS acoustic model: FastSpeech2-like, token ids -> mel spectrogram, with duration, pitch and energy predictors.

Two graphs around the data-dependent length: ``encoder`` (token ids -> encoder states with the predicted pitch and
energy added, FastPitch-style, and per-token log-durations) and ``decoder`` (states repeated to frames -> 80-bin
mel). ``speechperf.adapters.length`` turns log-durations into frame counts (``round(exp(d) - 1)``, at least 1, a
bound on the total) and repeats the states in numpy, the same on every backend. The mel feeds the mel vocoder
directly: 80 bins, [batch, frames, 80], one frame per 256 samples at 22.05 kHz.

PAD tokens are masked out of the encoder's attention (its convolutions still see them next to the last real
token, as in FastSpeech2 without masking); pass the token lengths to ``durations_from_log`` so padding gets no
frames. The decoder has no mask: it sees regulated frames only,
zero-padded to the longest item of the batch. Random weights would predict about 0 frames per token, so the
duration predictor's output bias starts at ``log(1 + initial_duration)``; a 20-token sentence then gives
100-250 frames (1.2-3 s of 22.05 kHz audio at hop 256), a realistic speaking rate.

Sizes:
- ``tiny``: d 32, 1 encoder + 1 decoder FFT block, 2 heads, conv FFN 64 (kernel 3), predictors 32, postnet 3 x 32:
  ~0.08 M parameters (~0.3 MB); a 20-token forward in about a millisecond; for tests.
- ``base``: ming024's FastSpeech2 LJSpeech config, the common open FastSpeech2: d 256, 4 encoder + 6 decoder FFT
  blocks, 2 heads, conv FFN 1024 with kernel 9, predictors 256 (kernel 3), postnet 5 x 512 (kernel 5), 80 symbols
  (ARPAbet phonemes, punctuation, fairseq's 4 specials): 34.4 M parameters. Dropout and BatchNorm in the postnet
  are left out (inference-time no-ops or folded).
"""

from __future__ import annotations

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.zoo.catalog import NUM_MEL_BINS, Component, ReferenceModel, item_lengths, random_tokens


@attrs.frozen
class TTSHparams:
    vocab_size: int
    dim: int
    heads: int
    ffn_dim: int
    ffn_kernel: int
    encoder_layers: int
    decoder_layers: int
    predictor_dim: int
    predictor_kernel: int
    postnet_dim: int
    postnet_layers: int
    postnet_kernel: int
    n_mels: int = NUM_MEL_BINS
    #: Frames per token that the untrained duration predictor starts at.
    initial_duration: float = 6.0


def _feeds(component: str, hp: TTSHparams, batch: int, length: int, rng: np.random.Generator):
    lengths = item_lengths(batch, length)
    if component == "encoder":
        return {"tokens": random_tokens(rng, hp.vocab_size, lengths)}
    hidden = rng.standard_normal((batch, length, hp.dim)).astype(np.float32)
    for i, n in enumerate(lengths):
        hidden[i, n:] = 0.0
    return {"hidden": hidden}


MODEL = ReferenceModel(
    name="tts",
    task="text-to-speech",
    description="FastSpeech2-like: FFT-block encoder, duration/pitch/energy predictors, FFT-block decoder, postnet",
    presets={
        "tiny": TTSHparams(
            vocab_size=48,
            dim=32,
            heads=2,
            ffn_dim=64,
            ffn_kernel=3,
            encoder_layers=1,
            decoder_layers=1,
            predictor_dim=32,
            predictor_kernel=3,
            postnet_dim=32,
            postnet_layers=3,
            postnet_kernel=5,
        ),
        "base": TTSHparams(
            vocab_size=80,
            dim=256,
            heads=2,
            ffn_dim=1024,
            ffn_kernel=9,
            encoder_layers=4,
            decoder_layers=6,
            predictor_dim=256,
            predictor_kernel=3,
            postnet_dim=512,
            postnet_layers=5,
            postnet_kernel=5,
        ),
    },
    components=(
        Component(
            "encoder",
            inputs=(TensorInfo("tokens", "int64", ("batch", "tokens")),),
            outputs=(
                TensorInfo("hidden", "float32", ("batch", "tokens", None)),
                TensorInfo("log_durations", "float32", ("batch", "tokens")),
            ),
            test_lengths=(3, 11, 20),
        ),
        Component(
            "decoder",
            inputs=(TensorInfo("hidden", "float32", ("batch", "frames", None)),),
            outputs=(TensorInfo("mel", "float32", ("batch", "frames", NUM_MEL_BINS)),),
            test_lengths=(7, 45, 120),
        ),
    ),
    feeds_fn=_feeds,
)
