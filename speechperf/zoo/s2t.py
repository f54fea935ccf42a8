"""S2T: a speech encoder-decoder (ASR / speech translation), like fairseq's ``s2t_transformer``.

Two 1-d convolutions with stride 2 and GLU subsample the 80-dim filterbank 4x (100 -> 25 frames/s); a pre-LN
transformer encoder follows, with a CTC head on top; an autoregressive pre-LN transformer decoder attends to it.

Sizes:
- ``tiny``: d 64, 2+2 layers, 2 heads, FFN 128, 64 tokens: 0.22 M parameters (< 1 MB), a forward in ~1 ms; for
  tests.
- ``base``: d 256, 12 encoder + 6 decoder layers, 4 heads, FFN 2048, conv channels 1024, 1000 tokens (a unigram
  vocabulary as used for ASR): 27.5 M parameters. This is fairseq's ``s2t_transformer_s`` (27-31 M in the fairseq
  S2T paper, depending on the vocabulary), the small production S2T model, at the 100 frames/s fbank rate.
"""

from __future__ import annotations

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.zoo.catalog import EOS, NUM_MEL_BINS, Component, ReferenceModel, item_lengths


@attrs.frozen
class SpeechSeq2SeqHparams:
    vocab_size: int
    d_model: int
    heads: int
    ffn: int
    encoder_layers: int
    decoder_layers: int
    conv_channels: int
    num_mel_bins: int = NUM_MEL_BINS
    ctc: bool = True
    #: the subsampler zeroes the frames past each item's length, so padding changes no item's outputs (a padded
    #: batch, ``general.batch_size``); part of the architecture, so models built before it are rebuilt
    subsampler_masks: bool = True


def encoder_out_length(frames: np.ndarray | int) -> np.ndarray | int:
    """Frames after the two stride-2 convolutions (kernel 5, padding 2)."""
    for _ in range(2):
        frames = (frames - 1) // 2 + 1
    return frames


def decoder_step_component(memory_axis: str, test_lengths=(1, 5, 12)) -> Component:
    return Component(
        "decoder_step",
        inputs=(
            TensorInfo("tokens", "int64", ("batch", "tokens")),
            TensorInfo("encoder_out", "float32", ("batch", memory_axis, None)),
            TensorInfo("encoder_lengths", "int64", ("batch",)),
        ),
        outputs=(TensorInfo("log_probs", "float32", ("batch", None)),),
        test_lengths=test_lengths,
    )


def decoder_step_feeds(d_model: int, vocab_size: int, batch: int, length: int, rng: np.random.Generator, memory=17):
    """A prefix of ``length`` tokens starting with EOS, and a random encoder output of ``memory`` frames."""
    tokens = rng.integers(4, vocab_size, size=(batch, length), dtype=np.int64)
    tokens[:, 0] = EOS
    lengths = item_lengths(batch, memory)
    encoder_out = rng.standard_normal((batch, memory, d_model)).astype(np.float32)
    return {"tokens": tokens, "encoder_out": encoder_out, "encoder_lengths": lengths}


def speech_feeds(num_mel_bins: int, batch: int, length: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Filterbank-like features (unit variance around a log-mel level), zero after each item's length."""
    lengths = item_lengths(batch, length)
    features = rng.standard_normal((batch, length, num_mel_bins)).astype(np.float32)
    for i, n in enumerate(lengths):
        features[i, n:] = 0.0
    return {"features": features, "feature_lengths": lengths}


def _feeds(component: str, hp: SpeechSeq2SeqHparams, batch: int, length: int, rng: np.random.Generator):
    if component == "encoder":
        return speech_feeds(hp.num_mel_bins, batch, length, rng)
    return decoder_step_feeds(hp.d_model, hp.vocab_size, batch, length, rng)


def speech_encoder_component(with_ctc: bool) -> Component:
    outputs = [TensorInfo("encoder_out", "float32", ("batch", "enc_frames", None))]
    if with_ctc:
        outputs.append(TensorInfo("ctc_logits", "float32", ("batch", "enc_frames", None)))
    outputs.append(TensorInfo("encoder_lengths", "int64", ("batch",)))
    return Component(
        "encoder",
        inputs=(
            TensorInfo("features", "float32", ("batch", "frames", NUM_MEL_BINS)),
            TensorInfo("feature_lengths", "int64", ("batch",)),
        ),
        outputs=tuple(outputs),
        test_lengths=(23, 64, 157),
    )


MODEL = ReferenceModel(
    name="s2t",
    task="speech-to-text",
    description="conv subsampling (4x) + transformer encoder with CTC head, autoregressive transformer decoder",
    presets={
        "tiny": SpeechSeq2SeqHparams(
            vocab_size=64, d_model=64, heads=2, ffn=128, encoder_layers=2, decoder_layers=2, conv_channels=64
        ),
        "base": SpeechSeq2SeqHparams(
            vocab_size=1000, d_model=256, heads=4, ffn=2048, encoder_layers=12, decoder_layers=6, conv_channels=1024
        ),
    },
    components=(speech_encoder_component(with_ctc=True), decoder_step_component("enc_frames")),
    feeds_fn=_feeds,
)
