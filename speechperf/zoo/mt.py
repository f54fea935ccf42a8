"""MT: a text encoder-decoder, a pre-LN transformer with shared source/target embeddings.

Sizes:
- ``tiny``: d 64, 2+2 layers, 2 heads, FFN 128, 96 tokens: 0.17 M parameters; for tests.
- ``base``: d 512, 6+6 layers, 4 heads, FFN 1024, 8000 tokens (one embedding shared by source, target and output):
  35.6 M parameters. This is fairseq's ``transformer_iwslt_de_en``, the usual small-production MT baseline (and
  the MT stage of fairseq's cascaded S2ST benchmark).
"""

from __future__ import annotations

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.zoo.catalog import Component, ReferenceModel, item_lengths, random_tokens
from speechperf.zoo.s2t import decoder_step_component, decoder_step_feeds


@attrs.frozen
class TextSeq2SeqHparams:
    vocab_size: int
    d_model: int
    heads: int
    ffn: int
    encoder_layers: int
    decoder_layers: int


def _feeds(component: str, hp: TextSeq2SeqHparams, batch: int, length: int, rng: np.random.Generator):
    if component == "encoder":
        lengths = item_lengths(batch, length)
        return {"src_tokens": random_tokens(rng, hp.vocab_size, lengths), "src_lengths": lengths}
    return decoder_step_feeds(hp.d_model, hp.vocab_size, batch, length, rng)


MODEL = ReferenceModel(
    name="mt",
    task="text-to-text",
    description="transformer encoder-decoder over subword tokens, autoregressive decoder",
    presets={
        "tiny": TextSeq2SeqHparams(vocab_size=96, d_model=64, heads=2, ffn=128, encoder_layers=2, decoder_layers=2),
        "base": TextSeq2SeqHparams(vocab_size=8000, d_model=512, heads=4, ffn=1024, encoder_layers=6, decoder_layers=6),
    },
    components=(
        Component(
            "encoder",
            inputs=(
                TensorInfo("src_tokens", "int64", ("batch", "src_tokens")),
                TensorInfo("src_lengths", "int64", ("batch",)),
            ),
            outputs=(
                TensorInfo("encoder_out", "float32", ("batch", "src_tokens", None)),
                TensorInfo("encoder_lengths", "int64", ("batch",)),
            ),
            test_lengths=(3, 11, 29),
        ),
        decoder_step_component("src_tokens"),
    ),
    feeds_fn=_feeds,
    seed=2,
)
