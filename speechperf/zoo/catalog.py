"""The registry of reference models, and the contract every model, framework definition and exporter follows.

speechperf ships its own small, seeded speech models, one per stage type, defined identically in torch and paddle
and exported to every format each backend loads. This module is framework-free: it says *what* each model is
(components, tensors, hyperparameters, example inputs); the frameworks say *how* it computes.

The contract
============

Framework-free description (``speechperf/zoo/<model>.py``, one module per model, listed in ``MODEL_MODULES``)
    The module defines ``MODEL``, a :class:`ReferenceModel`: its name, task, description, one attrs class instance
    of hyperparameters per preset (``"tiny"``, ``"base"``; the module's docstring says which sizes were chosen and
    why), its :class:`Component` s, and ``example_feeds(component, hparams, batch, length, rng)`` that returns a
    dict of numpy arrays for one component (items of a batch get different lengths, so padding is exercised).

Components
    A model is split into the graphs a backend runs: an autoregressive model into ``"encoder"`` and
    ``"decoder_step"`` (the decoding loop is numpy in ``speechperf.adapters.decoding``, shared by all backends); a
    model whose output length depends on data (TTS, unit vocoder) around the data-dependent part (length regulation
    is numpy in ``speechperf.adapters``). So every exported graph has only batch/time-like dynamic axes. Each
    :class:`Component` lists its inputs and outputs as :class:`~speechperf.backend.TensorInfo` with a dtype and a
    shape whose dynamic axes are *named* (``"batch"``, ``"time"``, ``"frames"``, ``"samples"``, ``"tokens"``...);
    a fixed int axis (the 80 feature bins) is checked by ``check_feeds`` and named in its error.

Framework definitions (``backends/torch/models/<model>.py``, ``backends/paddle/models/<model>.py``)
    Each defines ``build(hparams) -> dict[component_name, module]``. Every module in the dict is a thin wrapper
    whose only child is the shared parent model, stored as attribute ``model``; its ``forward`` arguments are named
    exactly as the component's inputs, in order, and it returns a tuple in the order of the component's outputs.
    The parent's ``state_dict()`` (keys without the ``model.`` prefix) holds every weight of every component, with
    the same parameter names in torch and paddle, in torch layout on disk (``.safetensors``); paddle reads it with
    ``speechperf.backends.paddle.weights.load_weights``, which transposes ``nn.Linear`` weights. Extra arrays that a
    numpy adapter needs (the unit extractor's k-means codebook) are persistent buffers of the parent and are also
    written by the build as ``<buffer>.npy`` in the model's folder, listed in ``ReferenceModel.artifacts``.
    Models are written to export with dynamic batch and time: no Python ints taken from shapes in torch beyond
    ``reshape``/``unflatten`` of known head sizes, ``reshape([0, 0, h, d])`` in paddle, positions and masks
    computed from the inputs (``cumsum`` of ones), never from a fixed-size table.

Build and export (``speechperf.zoo.build``, ``backends/<fw>/zoo.py``)
    torch initialises the weights from a seed (a pretrained model, ``PRETRAINED_MODELS``, loads its real weights
    through ``ReferenceModel.pretrained`` instead) and writes them; paddle loads the same file. Formats per component
    (``speechperf.zoo.build.zoo_formats()``, declared by the backends that build them in ``zoo_formats``): torch
    eager (factory + weights), TorchScript ``.pt``, ONNX from torch, paddle eager (factory + weights), paddle
    inference ``.json`` + ``.pdiparams``, ONNX from paddle. A manifest per model records what was built.
    ``ensure_built(model, preset)`` builds into the cache on demand and ``load_session(folder, component, format,
    threads)`` loads one component through the backend registry, on any backend that loads that file format.

Parity (``tests/test_zoo_parity.py``, generic over this catalog)
    Every component in every format is compared with torch eager at ``Component.test_lengths`` and batch 1 and 3,
    within ``ReferenceModel.tolerance`` relative to the output scale; decoded sequences must be identical.

Special token ids follow fairseq: ``BOS`` 0, ``PAD`` 1, ``EOS`` 2, ``UNK`` 3; decoding starts from ``EOS``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from speechperf.backend import TensorInfo
from speechperf.errors import SpeechperfError

BOS, PAD, EOS, UNK = 0, 1, 2, 3
#: Number of special symbols at the start of every vocabulary (fairseq's dictionary layout).
NUM_SPECIAL = 4

PRESETS = ("tiny", "base")

#: One module per model under ``speechperf.zoo``; each defines ``MODEL``. These have seeded random weights and are
#: built at every preset (the test suite builds them all at ``tiny``).
MODEL_MODULES = ("s2t", "mt", "tts", "mel_vocoder", "s2ut", "unit_vocoder", "unit_extractor")
#: Real trained models: name -> module under ``speechperf.zoo`` (and under each backend's ``models``). Their weights
#: come from an installed package (``ReferenceModel.pretrained``), they have one real size, and they are built only
#: when asked for by name. One may also have a seeded test size (``ReferenceModel.seeded_presets``). A module
#: holding several defines ``MODELS`` (name -> ReferenceModel) instead of ``MODEL``.
PRETRAINED_MODELS = {
    "whisper-tiny-en": "whisper",
    "whisper-base": "whisper",
    "hifigan-v1-lj": "hifigan",
    "hifigan-v1-universal": "hifigan",
    "marian-tiny-en-pt": "marian",
    "marian-tiny-pt-en": "marian",
    "piper-joe-medium": "piper",
}
#: Pretrained models whose framework definitions (each backend's ``models`` package) are another model's: zoo
#: module -> definition module. HiFi-GAN V1 is the reference mel vocoder's network at its published size.
DEFINED_BY = {"hifigan": "mel_vocoder"}

#: The input feature every speech model takes: 80-dim log-mel filterbank, 25 ms window, 10 ms hop, 16 kHz.
NUM_MEL_BINS = 80
SAMPLE_RATE = 16000
FRAMES_PER_SECOND = 100


class UnknownModelError(SpeechperfError):
    pass


@attrs.frozen
class Component:
    """One exported graph of a model.

    ``test_lengths`` are three lengths along the component's time-like axis (frames, samples, tokens) at which
    every exported format is checked against torch eager.
    """

    name: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    test_lengths: tuple[int, int, int]

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]

    def dynamic_axes(self) -> dict[str, dict[int, str]]:
        """Tensor name -> {axis: axis name} for every named (dynamic) axis, inputs and outputs."""
        return {
            t.name: {i: d for i, d in enumerate(t.shape or ()) if isinstance(d, str)}
            for t in (*self.inputs, *self.outputs)
        }


FeedsFn = Callable[[str, Any, int, int, np.random.Generator], dict[str, np.ndarray]]


@attrs.frozen
class ReferenceModel:
    """A reference model: what it is, its sizes, its graphs and example inputs. Framework-free."""

    name: str
    task: str
    description: str
    presets: Mapping[str, Any]
    components: tuple[Component, ...]
    feeds_fn: FeedsFn = attrs.field(repr=False)
    #: Parity tolerance: max |out - torch eager| <= tolerance * max(1, max |torch eager out|), per output.
    tolerance: float = 1e-4
    #: Parent buffers written beside the weights as ``<name>.npy`` for numpy adapters.
    artifacts: tuple[str, ...] = ()
    #: torch.manual_seed before the torch definition is built; each model has its own.
    seed: int = 0
    #: Real weights instead of seeded ones: hparams -> {parameter name: float32 array in torch layout}.
    pretrained: Callable[[Any], dict[str, np.ndarray]] | None = attrs.field(default=None, repr=False)
    #: Presets of a pretrained model that are built from the seed instead: a small model of the same architecture
    #: and interface, so the tests exercise every export of it in seconds (the real weights are checked in eager).
    seeded_presets: tuple[str, ...] = ()

    def is_pretrained(self, preset: str) -> bool:
        """Whether ``preset`` is built from the real weights (``pretrained``) rather than from the seed."""
        return self.pretrained is not None and preset not in self.seeded_presets

    def hparams(self, preset: str) -> Any:
        if preset not in self.presets:
            raise SpeechperfError(
                f"unknown preset {preset!r} for model {self.name!r}; known presets: {', '.join(self.presets)}"
            )
        return self.presets[preset]

    def component(self, name: str) -> Component:
        for comp in self.components:
            if comp.name == name:
                return comp
        known = ", ".join(c.name for c in self.components)
        raise SpeechperfError(f"model {self.name!r} has no component {name!r}; its components: {known}")

    @property
    def component_names(self) -> list[str]:
        return [c.name for c in self.components]

    def example_feeds(
        self, component: str, preset: str, batch: int, length: int, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Random inputs for one component: ``batch`` items, the longest ``length`` long on its time-like axis."""
        self.component(component)
        return self.feeds_fn(component, self.hparams(preset), batch, length, rng)


def known_models() -> list[str]:
    return [*MODEL_MODULES, *PRETRAINED_MODELS]


def models_at(preset: str) -> list[str]:
    """The models built at ``preset``: every seeded one, and the pretrained ones that have that preset."""
    return [
        *MODEL_MODULES,
        *(
            name
            for name in PRETRAINED_MODELS
            if get_model(name).is_pretrained(preset) and preset in get_model(name).presets
        ),
    ]


def definition_module(name: str) -> str:
    """The module that defines model ``name``, under ``speechperf.zoo`` and each backend's ``models`` package."""
    if name in PRETRAINED_MODELS:
        return DEFINED_BY.get(PRETRAINED_MODELS[name], PRETRAINED_MODELS[name])
    if name not in MODEL_MODULES:
        known = known_models()
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownModelError(f"unknown reference model {name!r}{hint}; known models: {', '.join(known)}")
    return name


def get_model(name: str) -> ReferenceModel:
    """The model's ``MODEL``; a module that defines several models (one per direction or checkpoint) has ``MODELS``
    by name."""
    definition_module(name)  # an unknown name is one line with the known ones
    module = importlib.import_module(f"speechperf.zoo.{PRETRAINED_MODELS.get(name, name)}")
    models = getattr(module, "MODELS", None)
    return models[name] if models is not None else module.MODEL


def check_preset(preset: str) -> str:
    if preset not in PRESETS:
        raise SpeechperfError(f"unknown preset {preset!r}; known presets: {', '.join(PRESETS)}")
    return preset


def item_lengths(batch: int, length: int) -> np.ndarray:
    """Per-item lengths of an example batch: the first item is ``length`` long, later ones shorter (padding)."""
    return np.array([max(1, length - (i * length) // 4) for i in range(batch)], dtype=np.int64)


def random_tokens(rng: np.random.Generator, vocab_size: int, lengths: np.ndarray) -> np.ndarray:
    """Token ids outside the special symbols, padded with ``PAD`` after each item's length."""
    tokens = rng.integers(NUM_SPECIAL, vocab_size, size=(len(lengths), int(lengths.max())), dtype=np.int64)
    for i, n in enumerate(lengths):
        tokens[i, n:] = PAD
    return tokens
