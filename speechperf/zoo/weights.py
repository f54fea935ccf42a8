"""Weights in the zoo's layout (``.safetensors`` under the torch names) read out of another framework's model file.

This is how a backend's port of a network gets real weights without reaching another backend itself: the core asks
the backend that writes the zoo's reference weights (``builds_reference_weights``, see ``speechperf.zoo.build``) to
``export_weights`` from the file, and hands the result to the port. The silero VAD runs on paddle this way: the
wheel's TorchScript file is exported once per silero-vad version (see docs/architecture.md, "Reference models").
"""

from __future__ import annotations

from pathlib import Path

from speechperf.backend import ModelSpec, hooks
from speechperf.errors import SpeechperfError
from speechperf.outputs import atomic_path


def weights_exporter():
    """The registered backend that writes the zoo's weights, and so exports a model file's weights in their layout."""
    from speechperf.zoo.build import zoo_builders

    builders = zoo_builders()
    if not builders or not hooks(builders[0]).builds_reference_weights:
        raise SpeechperfError(
            "no registered backend writes the zoo's weights (builds_reference_weights), so none can export them"
        )
    return builders[0]


def exported_weights(source: ModelSpec, out: Path) -> Path:
    """``out``: the weights of model file ``source`` in the zoo's layout, exported unless ``out`` already exists.

    Written under another name and renamed, so an interrupted export never leaves a half file behind."""
    out = Path(out)
    if not out.exists():
        exporter = weights_exporter()
        with atomic_path(out, "exported weights") as partial:
            hooks(exporter).export_weights(source, partial)
    return out
