"""The generation reference models (TTS acoustic model, mel vocoder, unit vocoder): torch and paddle definitions
agree with the same weights, and token ids become a waveform through sessions on each backend."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("paddle")

from speechperf.adapters.length import durations_from_log, regulate  # noqa: E402
from speechperf.zoo.catalog import get_model  # noqa: E402

MODELS = ("tts", "mel_vocoder", "unit_vocoder")


@pytest.fixture(scope="module")
def weights(tmp_path_factory) -> dict[str, Path]:
    """Seeded tiny torch weights of each model, written once for the whole module."""
    from speechperf.backends.torch import zoo as torch_zoo

    out = tmp_path_factory.mktemp("generation_weights")
    paths = {}
    for name in MODELS:
        components = torch_zoo.init_components(get_model(name), "tiny")
        paths[name] = out / f"{name}.safetensors"
        torch_zoo.save_weights(components, paths[name], ())
    return paths


def _torch_outputs(components, comp, feeds) -> list[np.ndarray]:
    import torch

    with torch.inference_mode():
        outs = components[comp.name](*[torch.from_numpy(feeds[t.name]) for t in comp.inputs])
    return [o.numpy() for o in outs]


def _paddle_outputs(components, comp, feeds) -> list[np.ndarray]:
    import paddle

    with paddle.no_grad():
        outs = components[comp.name](*[paddle.to_tensor(feeds[t.name]) for t in comp.inputs])
    return [o.numpy() for o in outs]


@pytest.mark.parametrize("name", MODELS)
def test_torch_and_paddle_agree_with_transferred_weights(name, weights):
    from safetensors.torch import load_file

    from speechperf.backends.paddle import zoo as paddle_zoo
    from speechperf.backends.torch.models import build, parent_of

    model = get_model(name)
    torch_components = build(name, model.hparams("tiny"))
    parent_of(torch_components).load_state_dict(load_file(str(weights[name])))
    paddle_components = paddle_zoo.load_components(name, "tiny", weights[name])
    rng = np.random.default_rng(7)
    for comp in model.components:
        for batch in (1, 3):
            for length in comp.test_lengths:
                feeds = model.example_feeds(comp.name, "tiny", batch, length, rng)
                expected = _torch_outputs(torch_components, comp, feeds)
                got = _paddle_outputs(paddle_components, comp, feeds)
                for info, want, have in zip(comp.outputs, expected, got, strict=True):
                    where = f"{name}.{comp.name}.{info.name} batch {batch} length {length}"
                    assert have.shape == want.shape, where
                    assert have.dtype == np.dtype(info.dtype), where
                    scale = max(1.0, float(np.abs(want).max()))
                    assert float(np.abs(have - want).max()) <= model.tolerance * scale, where


def test_output_lengths_follow_the_hop():
    from speechperf.backends.torch.models import build

    for name, comp_name, feeds_len in (("mel_vocoder", "generator", 9), ("unit_vocoder", "generator", 6)):
        model = get_model(name)
        hp = model.hparams("tiny")
        feeds = model.example_feeds(comp_name, "tiny", 2, feeds_len, np.random.default_rng(0))
        (waveform,) = _torch_outputs(build(name, hp), model.component(comp_name), feeds)
        assert waveform.shape == (2, feeds_len * hp.hop)
        assert np.abs(waveform).max() <= 1.0  # tanh output


@pytest.fixture(scope="module")
def built() -> Path:
    """The tiny generation models built in every format, in the test run's shared cache (tests/conftest.py)."""
    from speechperf.zoo.build import cache_dir, ensure_built

    for name in MODELS:
        ensure_built(name, "tiny")
    return cache_dir("tiny")


def synthesize(sessions: dict, tokens: np.ndarray, token_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token ids -> encoder -> length regulation -> decoder -> mel vocoder: (waveform, frames per item)."""
    encoded = sessions["encoder"]({"tokens": tokens})
    durations = durations_from_log(encoded["log_durations"], lengths=token_lengths, max_total=400)
    hidden, frames = regulate(encoded["hidden"], durations)
    mel = sessions["decoder"]({"hidden": hidden})["mel"]
    return sessions["vocoder"]({"mel": mel})["waveform"], frames


@pytest.mark.slow
def test_tts_pipeline_gives_the_same_waveform_in_every_format(built):
    from speechperf.zoo.build import FORMATS, load_session
    from speechperf.zoo.catalog import item_lengths, random_tokens

    hop = get_model("mel_vocoder").hparams("tiny").hop
    lengths = item_lengths(2, 20)
    tokens = random_tokens(np.random.default_rng(3), get_model("tts").hparams("tiny").vocab_size, lengths)
    results = {}
    for fmt in FORMATS:
        sessions = {
            "encoder": load_session(built / "tts", "encoder", fmt, threads=1),
            "decoder": load_session(built / "tts", "decoder", fmt, threads=1),
            "vocoder": load_session(built / "mel_vocoder", "generator", fmt, threads=1),
        }
        results[fmt] = synthesize(sessions, tokens, lengths)
    wave_ref, frames_ref = results["torch-eager"]
    assert frames_ref[0] > frames_ref[1]  # the shorter sentence gets fewer frames: its padding got none
    assert wave_ref.shape == (2, int(frames_ref.max()) * hop)
    for fmt, (wave, frames) in results.items():
        assert frames.tolist() == frames_ref.tolist(), fmt  # identical durations on every backend
        assert wave.shape == wave_ref.shape, fmt
        assert np.abs(wave - wave_ref).max() <= 1e-4, fmt


@pytest.mark.slow
def test_unit_vocoder_pipeline_gives_the_same_waveform_in_every_format(built):
    from speechperf.zoo.build import FORMATS, load_session

    hp = get_model("unit_vocoder").hparams("tiny")
    units = np.random.default_rng(5).integers(0, hp.num_units, size=(2, 15), dtype=np.int64)
    results = {}
    for fmt in FORMATS:
        duration = load_session(built / "unit_vocoder", "duration", fmt, threads=1)
        generator = load_session(built / "unit_vocoder", "generator", fmt, threads=1)
        durations = durations_from_log(duration({"units": units})["log_durations"], max_total=60)
        repeated, frames = regulate(units, durations)
        results[fmt] = generator({"units": repeated})["waveform"], frames
    wave_ref, frames_ref = results["torch-eager"]
    assert wave_ref.shape == (2, int(frames_ref.max()) * hp.hop)
    for fmt, (wave, frames) in results.items():
        assert frames.tolist() == frames_ref.tolist(), fmt
        assert np.abs(wave - wave_ref).max() <= 1e-4, fmt
