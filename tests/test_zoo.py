"""The zoo catalog: framework-free descriptions of the reference models and their errors."""

import numpy as np
import pytest

from speechperf.backend import check_feeds
from speechperf.errors import SpeechperfError
from speechperf.zoo.catalog import MODEL_MODULES, PRESETS, check_preset, get_model


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(SpeechperfError) as err:
        get_model("s2tt")
    assert "unknown reference model 's2tt' (did you mean 's2t'?)" in str(err.value)
    for name in MODEL_MODULES:
        assert name in str(err.value)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(SpeechperfError, match="unknown preset 'huge'; known presets: tiny, base"):
        check_preset("huge")
    with pytest.raises(SpeechperfError, match="unknown preset 'huge' for model 's2t'; known presets: tiny, base"):
        get_model("s2t").hparams("huge")
    with pytest.raises(SpeechperfError, match="has no component 'decoder'; its components: encoder, decoder_step"):
        get_model("s2t").component("decoder")


@pytest.mark.parametrize("name", MODEL_MODULES)
def test_every_model_has_both_presets_and_named_dynamic_axes(name):
    model = get_model(name)
    assert model.name == name
    assert tuple(model.presets) == PRESETS
    for comp in model.components:
        for info in (*comp.inputs, *comp.outputs):
            assert info.dtype is not None and info.shape is not None
            assert info.shape[0] == "batch", f"{name}.{comp.name}.{info.name} has no batch axis"
        assert len(comp.test_lengths) == 3 and len(set(comp.test_lengths)) == 3


@pytest.mark.parametrize("name", MODEL_MODULES)
@pytest.mark.parametrize("batch", [1, 3])
def test_example_feeds_fit_their_declared_inputs(name, batch):
    model = get_model(name)
    for comp in model.components:
        for length in comp.test_lengths:
            feeds = model.example_feeds(comp.name, "tiny", batch, length, np.random.default_rng(0))
            check_feeds(comp.inputs, feeds)  # raises on a wrong name, dtype, rank or fixed size
            assert all(v.shape[0] == batch for v in feeds.values())


def test_speech_feeds_have_decreasing_lengths_and_zero_padding():
    feeds = get_model("s2t").example_feeds("encoder", "tiny", 3, 64, np.random.default_rng(0))
    lengths = feeds["feature_lengths"]
    assert lengths.tolist() == [64, 48, 32]
    assert (feeds["features"][2, 32:] == 0).all() and (feeds["features"][2, :32] != 0).any()


def test_base_presets_have_the_documented_sizes():
    s2t = get_model("s2t").hparams("base")
    assert (s2t.d_model, s2t.encoder_layers, s2t.decoder_layers, s2t.num_mel_bins) == (256, 12, 6, 80)
    assert get_model("s2ut").hparams("base").vocab_size == 104  # 100 units + 4 specials
    assert get_model("unit_extractor").hparams("base").num_units == 100
