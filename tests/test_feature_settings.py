"""A stage's own feature settings (`stageN.features`): the configurable log-mel front-end, its presets, and the
config keys that set it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speechperf.adapters import features, whisper
from speechperf.benchmark.file_stage import feature_maker
from speechperf.config.load import ConfigError, parse_config
from speechperf.config.schema import FeatureConfig

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def speech() -> np.ndarray:
    clips = sorted(LIBRIVOX.glob("*.wav"))
    if not clips:
        pytest.skip("the LibriVox clips are missing (apt-get install pocketsphinx-testdata)")
    audio, rate = sf.read(clips[0], dtype="float32")
    assert rate == 16000
    return audio


def settings(**values) -> FeatureConfig:
    """A stage's features as the config loader makes them."""
    text = "general: {model_type: S2S}\nstage1: {path: m.onnx, inputs: [{name: x, source: features}], outputs: [y]}"
    cfg = parse_config(text, "<test>", sets=[f"stage1.features={values}"] if values else [])
    return cfg.stages[0].features


def test_the_default_settings_are_the_features_every_stage_had():
    audio = speech()
    np.testing.assert_array_equal(features.log_mel(audio), features.fbank(audio, 16000, normalize=True))
    made = feature_maker(settings())(audio, 16000)
    np.testing.assert_array_equal(made, features.fbank(audio, 16000, normalize=True))
    # The config's defaults and the adapter's are one set of values.
    defaults = {k: p.default for k, p in inspect.signature(features.log_mel).parameters.items() if k != "waveform"}
    assert FeatureConfig().settings() == defaults


def librosa_filters(sr: int, n_fft: int, n_mels: int, fmax: float) -> np.ndarray:
    """librosa.filters.mel's Slaney filterbank, from paddle.audio (an independent implementation)."""
    paddle_audio = pytest.importorskip("paddle.audio")
    return paddle_audio.functional.compute_fbank_matrix(sr, n_fft, n_mels, 0.0, fmax, htk=False).numpy()


def test_the_whisper_preset_is_openai_whispers_log_mel_spectrogram():
    """Against OpenAI Whisper's audio.log_mel_spectrogram written out with torch.stft and librosa's filters (its
    mel_filters.npz is librosa.filters.mel(sr=16000, n_fft=400, n_mels=80))."""
    import torch

    audio = speech()
    made = feature_maker(settings(preset="whisper"))(audio, 16000)
    padded = torch.nn.functional.pad(torch.from_numpy(audio), (0, 480000 - len(audio)))
    stft = torch.stft(padded, 400, 160, window=torch.hann_window(400), return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    mel_spec = torch.from_numpy(librosa_filters(16000, 400, 80, 8000.0)) @ magnitudes
    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = (torch.maximum(log_spec, log_spec.max() - 8.0) + 4.0) / 4.0
    assert made.shape == (3000, 80)
    np.testing.assert_allclose(made.T, log_spec.numpy(), atol=2e-4)
    np.testing.assert_array_equal(whisper.log_mel(audio), made.T)  # the Whisper stage's features are the preset's


def test_the_hifigan_preset_is_hifigans_mel_spectrogram():
    """Against jik876/hifi-gan meldataset.mel_spectrogram (config_v1: 22.05 kHz, n_fft 1024, hop 256, win 1024,
    0-8000 Hz) written out with torch.stft and librosa's filters."""
    import soxr
    import torch

    audio = soxr.resample(speech(), 16000, 22050).astype(np.float32)
    made = feature_maker(settings(preset="hifigan-22k"))(audio, 22050)
    y = torch.nn.functional.pad(torch.from_numpy(audio)[None, None], (384, 384), mode="reflect")[0, 0]
    spec = torch.stft(y, 1024, 256, 1024, window=torch.hann_window(1024), center=False, return_complex=True)
    spec = torch.sqrt(spec.real**2 + spec.imag**2 + 1e-9)
    mel = torch.log(torch.clamp(torch.from_numpy(librosa_filters(22050, 1024, 80, 8000.0)) @ spec, min=1e-5))
    assert made.shape == (len(audio) // 256, 80) == tuple(mel.T.shape)
    # HiFi-GAN's magnitude is sqrt(|X|^2 + 1e-9), which lifts only near-silent bins; above e^-8 it is |X|.
    audible = mel.numpy().T > -8.0
    assert audible.mean() > 0.5
    np.testing.assert_allclose(made[audible], mel.numpy().T[audible], atol=2e-3)


def test_slaney_filterbank_matches_paddle_audio_and_values_worked_by_hand():
    # 16 kHz, n_fft 16 (bins every 1 kHz), one filter over 0-8 kHz. Slaney: mel(8 kHz) = 15 + 27 ln 8 / ln 6.4
    # = 45.2456, the centre mel 22.6228 is 1000 * 6.4 ** (7.6228 / 27) = 1688.91 Hz; at 1 kHz the rising side is
    # 1000 / 1688.91, times the area normalisation 2 / 8000: 1.48025e-4; at 2 kHz the falling side 6000 / 6311.09
    # * 2 / 8000 = 2.37677e-4. HTK: the centre is 700 * (sqrt(1 + 8000 / 700) - 1) = 1767.79 Hz, at 1 kHz 0.565677.
    slaney = features.librosa_mel_filters(1, 16, 16000, 0.0, 8000.0, "slaney")
    np.testing.assert_allclose(slaney[0, 1:3], [1.48025e-4, 2.37677e-4], rtol=1e-5)
    htk = features.librosa_mel_filters(1, 16, 16000, 0.0, 8000.0, "htk")
    np.testing.assert_allclose(htk[0, 1], 0.565677, rtol=1e-5)
    for sr, n_fft, n_mels, fmax in ((22050, 1024, 80, 8000.0), (16000, 400, 80, 8000.0), (16000, 1024, 64, 8000.0)):
        mine = features.librosa_mel_filters(n_mels, n_fft, sr, 0.0, fmax, "slaney")
        np.testing.assert_allclose(mine, librosa_filters(sr, n_fft, n_mels, fmax), rtol=1e-4, atol=1e-7)


def test_paddings_give_the_frame_counts_vocoders_expect():
    audio = speech()[: 16000 + 77]
    n = len(audio)
    same = feature_maker(settings(preset="hifigan-16k"))(audio, 16000)
    assert same.shape == (n // 160, 80)  # one frame per hop: the vocoder gives back n // hop * hop samples
    center = feature_maker(settings(preset="hifigan-16k", padding="center"))(audio, 16000)
    assert center.shape == (1 + n // 160, 80)
    # hifigan-22k resamples to 22.05 kHz first: the frame count follows the resampled length.
    at_22k = feature_maker(settings(preset="hifigan-22k"))(audio, 16000)
    assert at_22k.shape[0] == round(n * 22050 / 16000) // 256
    # HiFi-GAN's log of the magnitude, floored at ln(1e-5), no normalisation.
    assert same.min() >= np.log(1e-5) - 1e-6 and abs(float(same.mean())) > 1.0


def test_settings_change_what_is_made():
    audio = speech()[:16000]
    base = feature_maker(settings(preset="hifigan-16k"))(audio, 16000)
    assert feature_maker(settings(preset="hifigan-16k", n_mels=64))(audio, 16000).shape == (100, 64)
    log10 = feature_maker(settings(preset="hifigan-16k", log="log10"))(audio, 16000)
    np.testing.assert_allclose(log10, base / np.log(10), rtol=1e-5, atol=1e-5)
    clamped = feature_maker(settings(preset="hifigan-16k", clamp=1e-2))(audio, 16000)
    assert clamped.min() == pytest.approx(np.log(1e-2)) and base.min() < np.log(1e-2)
    htk = feature_maker(settings(preset="hifigan-16k", mel_scale="htk"))(audio, 16000)
    assert not np.allclose(htk, base)
    narrow = feature_maker(settings(preset="hifigan-16k", fmin=300.0, fmax=4000.0, window="hamming"))(audio, 16000)
    assert narrow.shape == base.shape and not np.allclose(narrow, base)


def test_presets_resolve_and_keys_beside_them_replace_their_values():
    assert settings(preset="hifigan-22k").sample_rate == 22050
    custom = settings(preset="hifigan-22k", n_mels=100, fmax=11025)
    assert (custom.n_mels, custom.fmax, custom.hop_length, custom.preset) == (100, 11025.0, 256, "hifigan-22k")
    text = "general: {model_type: S2S}\nstage1: {path: m.ts, features: whisper, inputs: [{name: x, source: features}], outputs: [y]}"
    assert parse_config(text, "<t>").stages[0].features == settings(preset="whisper")


@pytest.mark.parametrize(
    "values, message",
    [
        ({"preset": "hifigan"}, "stage1.features.preset = 'hifigan'; allowed: kaldi-fbank, hifigan-22k"),
        ({"n_mel": 64}, "unknown key stage1.features.n_mel (did you mean 'n_mels'?)"),
        ({"mel_scale": "slaney"}, "stage1.features.mel_scale = 'slaney' does not apply to frontend 'kaldi'"),
        ({"preset": "hifigan-16k", "win_length": 2048}, "win_length = 2048 is longer than n_fft = 1024"),
        ({"preset": "hifigan-16k", "fmax": 9000}, "fmax = 9000 is above half the sample rate (8000 Hz)"),
        ({"log": "log2"}, "stage1.features.log = 'log2'; allowed: ln, log10"),
        ({"clamp": 0}, "stage1.features.clamp = 0; must be > 0"),
    ],
)
def test_bad_feature_settings_are_one_line_naming_the_key(values, message):
    with pytest.raises(ConfigError, match="^<test>.*" + re.escape(message)):
        settings(**values)


def test_features_of_a_reference_model_are_refused():
    with pytest.raises(ConfigError, match="stage1.features applies to your own model file"):
        parse_config("stage1: {model: s2t, features: whisper}", "<test>")
