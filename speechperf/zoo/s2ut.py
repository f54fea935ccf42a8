"""S2UT: speech to discrete units (code size 100), like fairseq's ``s2ut_transformer``.

The same architecture as S2T (conv subsampling + transformer encoder, autoregressive transformer decoder), without
the CTC head, decoding into 100 discrete units (plus fairseq's 4 special symbols: 104 output classes).

Sizes:
- ``tiny``: d 64, 2+2 layers, 2 heads, FFN 128: 0.22 M parameters; for tests.
- ``base``: d 256, 12 encoder + 6 decoder layers, 4 heads, FFN 2048, conv channels 1024: 27.0 M parameters, the
  size of fairseq's S2UT transformer in its direct S2ST recipe.
"""

from __future__ import annotations

from speechperf.zoo.catalog import NUM_SPECIAL, ReferenceModel
from speechperf.zoo.s2t import SpeechSeq2SeqHparams, _feeds, decoder_step_component, speech_encoder_component

#: k-means code size of the discrete units.
NUM_UNITS = 100

MODEL = ReferenceModel(
    name="s2ut",
    task="speech-to-unit",
    description="conv subsampling (4x) + transformer encoder, autoregressive transformer decoder over 100 units",
    presets={
        "tiny": SpeechSeq2SeqHparams(
            vocab_size=NUM_UNITS + NUM_SPECIAL,
            d_model=64,
            heads=2,
            ffn=128,
            encoder_layers=2,
            decoder_layers=2,
            conv_channels=64,
            ctc=False,
        ),
        "base": SpeechSeq2SeqHparams(
            vocab_size=NUM_UNITS + NUM_SPECIAL,
            d_model=256,
            heads=4,
            ffn=2048,
            encoder_layers=12,
            decoder_layers=6,
            conv_channels=1024,
            ctc=False,
        ),
    },
    components=(speech_encoder_component(with_ctc=False), decoder_step_component("enc_frames")),
    feeds_fn=_feeds,
    seed=1,  # S2T is seed 0: the same architecture would otherwise start from the same encoder weights
)
