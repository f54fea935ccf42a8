"""The optional dependencies of the core and the pip extra that installs each.

The core (bench, compare, optimize, check) runs without them; the one feature that needs a missing one says so in a
single line with the install command, e.g. ``--plot needs the matplotlib package, which is not installed:
pip install "speechperf[plot]"``. The frameworks are extras too, but a backend reports them itself
(``Backend.availability``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import attrs

from speechperf.errors import SpeechperfError


@attrs.frozen
class Extra:
    module: str  # what is imported
    distribution: str  # what pip installs
    extra: str  # speechperf's extra that pulls it in

    @property
    def install_hint(self) -> str:
        return f'pip install "speechperf[{self.extra}]"'


EXTRAS = {
    e.module: e
    for e in (
        Extra("pypapi", "python-papi", "papi"),
        Extra("memory_profiler", "memory_profiler", "memory"),
        Extra("matplotlib", "matplotlib", "plot"),
        Extra("mlperf_loadgen", "mlcommons-loadgen", "loadgen"),
        Extra("speechmos.dnsmos", "speechmos", "speech-quality"),
        Extra("librosa", "librosa", "speech-quality"),
        Extra("mel_cepstral_distance", "mel-cepstral-distance", "speech-quality"),
        Extra("pesq", "pesq", "speech-quality"),
        Extra("pystoi", "pystoi", "speech-quality"),
        Extra("transformers", "transformers", "hf"),
        Extra("tokenizers", "tokenizers", "hf"),
    )
}


class MissingExtraError(SpeechperfError):
    """An optional package that a feature needs is not installed; the message says how to install it."""


def missing_message(module: str, what: str) -> str:
    extra = EXTRAS[module]
    return f"{what} needs the {extra.distribution} package, which is not installed: {extra.install_hint}"


def require(module: str, what: str) -> ModuleType:
    """Import the optional ``module`` for ``what`` (a feature, named as the user asked for it), or raise
    ``MissingExtraError`` with the install command. A package that is installed but fails to load (a broken shared
    library) raises its own error: that is not a missing extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name != module and not module.startswith(exc.name + "."):
            raise  # the package is there, one of its own dependencies is not
        raise MissingExtraError(missing_message(module, what)) from None
