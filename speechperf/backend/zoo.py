"""``ZooFormat``: one format a backend builds the reference models of ``speechperf.zoo`` in (its ``zoo_formats``)."""

from __future__ import annotations

import attrs


@attrs.frozen
class ZooFormat:
    """One format the reference models of ``speechperf.zoo`` are built in, declared by the backend that builds it.

    Any backend whose ``capabilities.formats`` holds ``format`` runs it: ``"onnx"`` files built by torch run on
    onnxruntime and on any plugin that loads ONNX. ``path`` is the file inside a model's folder (``{component}``
    filled in), or None for ``factory`` (``"module:callable"``) + the shared weights. ``counted_as`` names the zoo
    format of the same model and weights that FLOP counters walk instead (a paddle inference program keeps -1 for
    batch and time, so its shapes cannot be counted). A ``variant`` format is never built: it is a file that
    ``speechperf optimize`` writes into a copy of a model's folder (e.g. a quantized ``torch.export`` program), and
    it loads from there like the built ones.
    """

    format: str
    path: str | None = None
    factory: str | None = None
    counted_as: str | None = None
    variant: bool = False
