"""The check of quantization method names against what a backend offers (``Capabilities.quantization``)."""

from __future__ import annotations

from speechperf.errors import SpeechperfError


def check_method(backend, method: str) -> str:
    """``method`` if ``backend`` offers it, else a one-line error naming the backend's quantization methods."""
    methods = tuple(backend.capabilities.quantization)
    if method not in methods:
        offered = ", ".join(methods) if methods else "none"
        raise SpeechperfError(
            f"unknown quantization method {method!r} for backend {backend.name!r}; its methods: {offered}"
        )
    return method


def check_methods(backend, methods) -> tuple[str, ...]:
    """``methods`` (a command's --method list) if ``backend`` offers each, once; else a one-line error."""
    if not methods:
        raise SpeechperfError(
            f"no --method given; backend {backend.name!r} offers: "
            f"{', '.join(backend.capabilities.quantization) or 'none'}"
        )
    for method in methods:
        check_method(backend, method)
    if len(set(methods)) != len(methods):
        raise SpeechperfError(f"--method lists a method twice: {','.join(methods)}")
    return tuple(methods)
