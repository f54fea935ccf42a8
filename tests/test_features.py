import numpy as np
import pytest

from speechperf.adapters.features import batch_fbank, fbank, mel, mel_filterbank, num_frames
from speechperf.errors import FeedError


@pytest.mark.parametrize("samples, frames", [(400, 1), (559, 1), (560, 2), (16000, 98), (80000, 498)])
def test_frame_count_follows_25ms_window_10ms_hop(samples, frames):
    assert num_frames(samples) == frames
    assert fbank(np.random.default_rng(0).standard_normal(samples) * 0.1).shape == (frames, 80)


@pytest.mark.parametrize("freq", [300.0, 1000.0, 4000.0])
def test_pure_tone_energy_lands_in_the_mel_bin_centred_on_it(freq):
    t = np.arange(16000) / 16000
    feats = fbank(0.5 * np.sin(2 * np.pi * freq * t))
    centres = np.linspace(mel(20.0), mel(8000.0), 82)[1:-1]
    expected = int(np.abs(centres - mel(freq)).argmin())
    assert abs(int(feats.mean(axis=0).argmax()) - expected) <= 1


def test_louder_signal_gives_higher_log_energy_by_the_power_ratio():
    x = np.random.default_rng(1).standard_normal(8000) * 0.1
    diff = fbank(2 * x) - fbank(x)
    np.testing.assert_allclose(diff, np.log(4.0), atol=1e-3)


def test_every_filter_is_nonempty_and_filters_rise_in_frequency():
    bank = mel_filterbank()
    assert bank.shape == (80, 257)
    assert bank.min() >= 0 and bank.max() <= 1
    assert (bank.sum(axis=1) > 0).all()  # 80 bins on a 512-point FFT: even the narrowest filter sees a bin
    assert (np.diff(bank.argmax(axis=1)) >= 0).all()


def test_normalized_features_have_zero_mean_unit_variance():
    feats = fbank(np.random.default_rng(2).standard_normal(16000), normalize=True)
    np.testing.assert_allclose(feats.mean(axis=0), 0, atol=1e-4)
    np.testing.assert_allclose(feats.std(axis=0), 1, atol=1e-3)


def test_batch_is_zero_padded_with_lengths():
    rng = np.random.default_rng(3)
    long, short = rng.standard_normal(16000), rng.standard_normal(8000)
    feats, lengths = batch_fbank([long, short])
    assert feats.shape == (2, 98, 80) and lengths.tolist() == [98, 48]
    assert (feats[1, 48:] == 0).all()
    np.testing.assert_array_equal(feats[1, :48], fbank(short))


def test_too_short_and_multichannel_waveforms_are_rejected_by_name():
    with pytest.raises(FeedError, match="waveform has 399 samples; at least 400"):
        fbank(np.zeros(399))
    with pytest.raises(FeedError, match="waveform has shape"):
        fbank(np.zeros((2, 16000)))
