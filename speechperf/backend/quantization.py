"""The check of a quantization method name against what a backend offers (``Capabilities.quantization``)."""

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
