"""A pruned reference model: a zoo model folder like the built ones, whose weights were pruned.

The backend that writes the zoo's weights (``builds_reference_weights``) prunes them (``prune_reference``: torch's
``torch.nn.utils.prune``, made permanent) and exports its own formats from the pruned model; every other builder
asked for builds its formats from those weights (paddle loads the same zeros into its twin of the network), so each
backend runs the same pruned numbers. A structured method that removed FFN neurons records the smaller size in the
manifest (``pruning.architecture``), and the factories of the eager formats build the smaller layers from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from speechperf.backend import hooks
from speechperf.outputs import atomic_folder, write_text_atomic
from speechperf.zoo.build import MANIFEST, _file_entry, builders_for, read_manifest


def build_pruned(source: Path, method: str, sparsity: float, folder: Path, formats) -> dict:
    """Prune the model built in ``source`` with ``method`` at ``sparsity`` into ``folder`` (replaced), with the zoo
    ``formats`` a stage needs; returns the manifest (``pruning``: method, sparsity asked, the sizes changed, the
    pruned weights' names)."""
    manifest = read_manifest(source)
    model, preset = manifest["model"], manifest["preset"]
    builders = builders_for(formats)
    weights_backend, ports = builders[0], builders[1:]
    own = hooks(weights_backend).zoo_formats
    # The weights' own backend exports only the file formats asked for: its eager format (a factory and the
    # weights) needs the weights alone.
    exports = tuple(f for f in formats if f in own and own[f].path is not None)
    built = [f for f, zf in own.items() if not zf.variant and (f in exports or zf.path is None)]
    built += [f for port in ports for f, zf in hooks(port).zoo_formats.items() if not zf.variant]
    with atomic_folder(folder, f"pruned model {folder.name}") as work:
        pruned = hooks(weights_backend).prune_reference(
            model, preset, Path(source) / "weights.safetensors", method, sparsity, work, exports
        )
        artifacts = list(pruned["artifacts"])
        for port in ports:
            artifacts += hooks(port).build_reference(model, preset, work, pruned["weights"], pruned["architecture"])
        manifest = dict(manifest)
        manifest["files"] = [_file_entry(work, a) for a in artifacts]
        manifest["parameter_count"] = pruned["parameter_count"]
        manifest["formats"] = built
        manifest["pruning"] = {
            "method": method,
            "sparsity": sparsity,
            "backend": weights_backend.name,
            "architecture": pruned["architecture"],
            "targets": list(pruned["targets"]),
            "from": str(source),
        }
        write_text_atomic(work / MANIFEST, json.dumps(manifest, indent=2) + "\n", "pruned model manifest")
    return manifest
