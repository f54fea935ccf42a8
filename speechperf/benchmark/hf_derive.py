"""The ONNX files of a ``model: hf`` stage for the backend that runs ``.onnx`` (onnxruntime), exported from the
folder's Transformers modules by the backend that runs them (its ``export_onnx``: torch.onnx.export) and kept only
past the parity gate of ``derive`` (speechperf.benchmark.derive.gate), as a user's ``derive: onnx`` file is.

torch.onnx.export was taken over optimum-onnx: optimum's exporter writes its own graph interfaces (a decoder with
and without past, merged), which would need a second decoding loop; exporting the same modules the torch backend
runs keeps one loop (speechperf.adapters.hf) and one set of graphs on every backend.

The gate runs the stage on the modules for the config's first ``GATE_SAMPLES`` samples, records every call of each
graph (the CTC logits; Whisper's encoder and each decoding step), runs the same feeds through the ONNX files and
compares every output under the stage's tolerance. The files are cached by the folder's content and the exporter's
version in ``<cache>/derived/hf-<hash>/`` (``ctc.onnx``, or ``encoder.onnx`` and ``decoder.onnx``), the verdict
beside them per dataset and tolerance. Export and gate run in a child process (``python -m
speechperf.benchmark.hf_derive``): they import torch and Transformers, which must not sit in the measured process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import attrs

from speechperf.backend import ModelSpec, Session, TensorInfo, hooks
from speechperf.benchmark.gate import GATE_SAMPLES, VERDICT, gate, gate_key, short
from speechperf.benchmark.hf_stage import GRAPHS, folder_of
from speechperf.config.schema import BenchConfig, StageConfig
from speechperf.errors import ModelFileError

_log = logging.getLogger("speechperf.benchmark.hf_derive")

#: Calls of each graph the gate compares (a Whisper decoder is called once per token).
GATE_CALLS = 24


def exporter_backend() -> str:
    """The backend that runs Transformers modules and exports them to ONNX."""
    from speechperf.benchmark.backend_files import _backends

    for backend in _backends():
        if hooks(backend).transformers_factories and hooks(backend).onnx_exporter:
            return backend.name
    raise ModelFileError("model: hf: no registered backend runs Transformers modules and exports them to ONNX")


def export_key(stage: StageConfig) -> str:
    """The folder's files, its kind's graphs and the exporter's version."""
    from importlib import metadata

    from speechperf.outputs import file_sha256

    folder = folder_of(stage)
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.path.iterdir() if p.is_file()):
        digest.update(f"{file.name}:{file_sha256(file)}".encode())
    source = exporter_backend()
    package = hooks(_get(source)).onnx_exporter[1]  # type: ignore[index]
    versions = {}
    for name in (package, "transformers"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "missing"
    graphs = [attrs.asdict(g) for g in GRAPHS[folder.kind]]
    digest.update(json.dumps({"graphs": graphs, "versions": versions}, sort_keys=True, default=str).encode())
    return "hf-" + digest.hexdigest()[:20]


def _get(name: str):
    from speechperf.registry import get_backend

    return get_backend(name)


def derived_folder(cfg: BenchConfig, index: int) -> Path:
    """The folder of the stage's ONNX files, derived (or from the cache) and past the gate; a ModelFileError with
    the measured difference when the gate refuses them."""
    from speechperf.cache import cache_dir
    from speechperf.config import write_config

    stage = cfg.stages[index - 1]
    folder = cache_dir() / "derived" / export_key(stage)
    verdict_path = folder / VERDICT.format(key=gate_key(cfg, stage))
    if not verdict_path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / f"config-{gate_key(cfg, stage)}.yaml"
        write_config(cfg.to_dict(), config)
        _log.info(
            "deriving ONNX for stage%d (model: hf, %s) with torch.onnx.export into %s (once; checked against the "
            "Transformers modules before use) ...",
            index,
            stage.path,
            folder,
        )
        done = subprocess.run(
            [sys.executable, "-m", "speechperf.benchmark.hf_derive", str(config), str(index), str(folder), cfg.source],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if not verdict_path.is_file():
            _log.error("%s", "\n".join(done.stdout.splitlines()[-30:]))
            raise ModelFileError(
                f"{cfg.source}: stage{index}: model: hf: the ONNX export of {stage.path} failed (exit "
                f"{done.returncode}); the exporter's last messages are above"
            )
    verdict = json.loads(verdict_path.read_text(encoding="utf-8"))
    if not verdict["ok"]:
        raise ModelFileError(verdict["line"])
    _log.info("stage%d: %s", index, verdict["line"])
    return folder


class _Recorder:
    """A session that keeps each call's feeds and outputs (the first ``GATE_CALLS``)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __call__(self, feeds):
        out = self.inner(feeds)
        if len(self.calls) < GATE_CALLS:
            self.calls.append(({k: v.copy() for k, v in feeds.items()}, dict(out)))
        return out


def _backend_export(backend, spec: ModelSpec, feeds: dict, outputs: list, axes: dict, out: Path) -> Path:
    return hooks(backend).export_onnx(spec, feeds, outputs, axes, out)


def derive(cfg: BenchConfig, index: int, folder: Path, export=_backend_export) -> dict:
    """Export and gate stage ``index`` in this process; writes and returns the verdict. ``export`` is the exporter
    (the modules' backend's ``export_onnx``)."""
    from speechperf.benchmark.backend_files import onnx_runner
    from speechperf.benchmark.hf_stage import hf_stage
    from speechperf.benchmark.report import write_json_atomic
    from speechperf.data import load_dataset
    from speechperf.outputs import atomic_path
    from speechperf.registry import require_backend

    stage_cfg = attrs.evolve(cfg.stages[index - 1], model_dir=None, options=None)
    where = f"{cfg.source}: stage{index}"
    general = cfg.general
    source = require_backend(exporter_backend())
    source.set_threads(general.threads)
    source.seed(general.seed)
    stage = hf_stage(stage_cfg, cfg.roles[index - 1], where, source, general.device, general.threads)
    recorders = {name: _Recorder(session) for name, session in stage.sessions.items()}
    for sample in load_dataset(general, cfg.roles[0])[:GATE_SAMPLES]:
        stage.run(cast(Mapping[str, Session], recorders), stage.from_sample(sample))
    runner = onnx_runner()
    if runner is None:
        raise ModelFileError(f"{where}: model: hf: no registered backend loads .onnx files")
    ort = require_backend(runner)
    ort.set_threads(general.threads)
    figures, refused = {}, []
    for graph in GRAPHS[folder_of(stage_cfg).kind]:
        calls = recorders[graph.name].calls
        onnx = folder / f"{graph.name}.onnx"
        if not onnx.is_file():
            spec = ModelSpec(
                factory=f"{hooks(source).transformers_factories}:{graph.factory}",
                factory_kwargs={"folder": str(stage_cfg.path)},
            )
            with atomic_path(onnx, "derived ONNX") as tmp:
                feeds = {t.name: calls[0][0][t.name] for t in graph.inputs}  # the module's argument order
                export(source, spec, feeds, list(graph.outputs), dict(graph.dynamic_axes), Path(tmp))
        outputs = tuple(TensorInfo(n) for n in graph.outputs)
        spec = ModelSpec(path=onnx, format="onnx", inputs=graph.inputs, outputs=outputs)
        session = ort.load(spec, device=general.device, threads=general.threads)
        got = [session(feeds) for feeds, _ in calls]
        shown, bad = gate(list(graph.outputs), [out for _, out in calls], got, stage_cfg.tolerance)
        figures[graph.name] = shown
        refused += [f"{graph.name}: {line}" for line in bad]
    n = min(GATE_SAMPLES, len(load_dataset(general, cfg.roles[0])))
    if refused:
        line = (
            f"{where}: model: hf: the ONNX export differs from the Transformers modules on its first {n} sample(s): "
            f"{'; '.join(refused)} (files in {folder}; tolerance: stage{index}.tolerance)"
        )
    else:
        shown_all = ", ".join(
            f"{g} {name} {'identical' if f.get('exact') else short(f)}"
            for g, outs in figures.items()
            for name, f in outs.items()
        )
        line = (
            f"derived {folder} from {stage_cfg.path} by torch.onnx.export; parity with {source.name} on {n} "
            f"sample(s): {shown_all}"
        )
    verdict = {"ok": not refused, "line": line, "folder": str(folder), "outputs": figures}
    write_json_atomic(folder / VERDICT.format(key=gate_key(cfg, cfg.stages[index - 1])), verdict, "derive verdict")
    return verdict


def main(argv: list[str]) -> int:
    """The child: CONFIG INDEX FOLDER SOURCE (SOURCE: the user's config name, for the messages)."""
    from speechperf import logs
    from speechperf.benchmark.build import stdout_to_stderr
    from speechperf.config import load_config

    config, index, folder, source = argv
    logs.configure(logging.INFO)
    with stdout_to_stderr():
        cfg = attrs.evolve(load_config(config), source=source)
        verdict = derive(cfg, int(index), Path(folder))
    _log.info("%s", verdict["line"])
    return 0 if verdict["ok"] else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
