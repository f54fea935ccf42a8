"""``derive: onnx``: the onnxruntime file of a user's stage, exported from its torch or paddle file by the
framework's own exporter, and used only once its outputs match the source's.

- From TorchScript: ``torch.onnx.export`` (the TorchScript exporter), the time axis of each sourced input dynamic.
- From a paddle inference program: paddle2onnx, the program's declared shapes carrying its dynamic axes.

The export is cached by the source's content hash (its files, the declared inputs and outputs, the exporter's
version) in ``<cache>/derived/<hash>/model.onnx``. Before it is used, the source (on its own backend) and the
derived file (on onnxruntime) run the stage's inputs of the config's first ``GATE_SAMPLES`` samples, and every
output is compared with speechperf.meters.fidelity under the stage's tolerance: a file past it is refused, in one
line with the measured difference, and never used. The verdict is cached beside the file per dataset and
tolerance. Export and gate run in a child process (``python -m speechperf.benchmark.derive``): they import the
source framework, which must not sit in the measured process.

The reverse direction, ONNX to torch (onnx2torch) or paddle (x2paddle), is not offered: measured on this project's
models, onnx2torch 1.5.15 has no GRU converter, differs from onnxruntime by up to 1.83 on the zoo's base S2T
encoder and fails in LayerNorm on the Whisper tiny.en encoder; x2paddle 1.6.0 rejects GRU, ConvTranspose and the
transformer encoders.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import attrs

from speechperf.backend.hooks import hooks
from speechperf.benchmark.backend_files import (
    derives_for,
    files_of,
    onnx_runner,
    require_derive_source,
    require_exporter,
    stage_file,
)
from speechperf.benchmark.gate import GATE_SAMPLES, VERDICT, gate, gate_key, short
from speechperf.config.schema import BenchConfig, StageConfig
from speechperf.errors import ModelFileError

#: Named, not ``__name__``: the child runs this module as ``__main__``.
_log = logging.getLogger("speechperf.benchmark.derive")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "missing"


def export_key(stage: StageConfig) -> str:
    """The content hash a derived file is cached by: the source's files, what the stage declares, the exporter."""
    backend, source = require_derive_source(stage)
    digest = hashlib.sha256()
    from speechperf.backend import ModelSpec
    from speechperf.outputs import file_sha256

    for file in files_of(ModelSpec(Path(source))):  # a paddle program's .pdiparams too
        digest.update(file_sha256(file).encode())
    package = require_exporter(backend)[1]
    declared = {
        "inputs": [attrs.asdict(i) for i in stage.inputs],
        "outputs": list(stage.outputs),
        "entry": stage.entry,
        "exporter": [package, _version(package)],
    }
    digest.update(json.dumps(declared, sort_keys=True).encode())
    return digest.hexdigest()[:20]


def derived_file(cfg: BenchConfig, index: int) -> Path:
    """The onnxruntime file of stage ``index``, derived (or from the cache) and past its parity gate; a
    ModelFileError with the measured difference when the gate refuses it."""
    from speechperf.cache import cache_dir

    stage = cfg.stages[index - 1]
    folder = cache_dir() / "derived" / export_key(stage)
    verdict_path = folder / VERDICT.format(key=gate_key(cfg, stage))
    if not verdict_path.is_file():
        source_backend, source = require_derive_source(stage)
        exporter = require_exporter(source_backend)[0]
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / f"config-{gate_key(cfg, stage)}.yaml"
        from speechperf.config import write_config  # one YAML writer for configs a child reads

        write_config(cfg.to_dict(), config)
        _log.info(
            "deriving ONNX for stage%d from %s with %s into %s (once; checked against the source before use) ...",
            index,
            source,
            exporter,
            folder,
        )
        done = subprocess.run(
            [sys.executable, "-m", "speechperf.benchmark.derive", str(config), str(index), str(folder), cfg.source],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if not verdict_path.is_file():
            _log.error("%s", "\n".join(done.stdout.splitlines()[-30:]))
            raise ModelFileError(
                f"{cfg.source}: stage{index}: derive: onnx from {source} failed (exit {done.returncode}); "
                "the exporter's last messages are above"
            )
    verdict = json.loads(verdict_path.read_text(encoding="utf-8"))
    if not verdict["ok"]:
        raise ModelFileError(verdict["line"])
    _log.info("stage%d: %s", index, verdict["line"])
    return Path(verdict["file"])


def config_for_backend(cfg: BenchConfig, backend_name: str, workdir: Path | None = None) -> BenchConfig:
    """``cfg`` with each ``path`` stage pointing at the one file ``backend_name`` (or the stage's pinned backend)
    runs. With ``workdir``, a derived
    file is made (or taken from the cache) and gated on parity; without, a stage that derives keeps its source
    file, as ``config check`` needs (nothing is exported to check a config)."""
    from speechperf.benchmark import hf_stage

    stages = []
    for index, stage in enumerate(cfg.stages, 1):
        if hf_stage.is_hf(stage):  # a Hugging Face folder: its ONNX export for the backend that runs .onnx
            if workdir is not None and hf_stage.derives_for(stage, stage.runs_on(backend_name)):
                from speechperf.benchmark.hf_derive import derived_folder

                stage = attrs.evolve(stage, model_dir=str(derived_folder(cfg, index)))
            stages.append(stage)
            continue
        if not stage.path:
            stages.append(stage)
            continue
        where = f"{cfg.source}: stage{index}"
        runs_on = stage.runs_on(backend_name)  # a pinned stage runs its pinned backend's file
        file = stage_file(stage, runs_on, where)  # a stage that derives: its source
        if workdir is not None and derives_for(stage, runs_on):
            stages.append(attrs.evolve(stage, path=str(derived_file(cfg, index)), format="onnx"))
            continue
        stages.append(attrs.evolve(stage, path=file, format=stage.format if isinstance(stage.path, str) else None))
    return attrs.evolve(cfg, stages=tuple(stages))


def dynamic_axes(stage: StageConfig) -> dict[str, dict[int, str]]:
    """The time axis of each sourced input (by its layout), declared dynamic to the exporter."""
    from speechperf.benchmark.layout import layout_of

    axes = {}
    for i in stage.inputs:
        if i.source and not i.source.endswith("_length"):
            letters = layout_of(i.source, i.layout)
            axes[i.name] = {letters.index("T"): f"{i.name}_frames"}
    return axes


Exporter = Callable[[object, Path, dict, list, dict, Path], Path]


def _backend_export(backend, source: Path, feeds: dict, outputs: list, axes: dict, out: Path) -> Path:
    return hooks(backend).export_onnx(source, feeds, outputs, axes, out)


def derive(cfg: BenchConfig, index: int, folder: Path, export: Exporter = _backend_export) -> dict:
    """Export and gate stage ``index`` in this process; writes and returns the verdict. ``export`` is the exporter
    (the source backend's ``export_onnx``)."""
    from speechperf.backend import ModelSpec, TensorInfo
    from speechperf.benchmark import build
    from speechperf.benchmark.file_stage import FileStage
    from speechperf.data import load_dataset
    from speechperf.outputs import atomic_path
    from speechperf.registry import require_backend

    stage_cfg = cfg.stages[index - 1]
    source_backend, source = require_derive_source(stage_cfg)
    where = f"{cfg.source}: stage{index}"
    general = cfg.general
    samples = load_dataset(general, cfg.roles[0])[:GATE_SAMPLES]
    backend = require_backend(source_backend)
    backend.set_threads(general.threads)
    backend.seed(general.seed)
    resolved = config_for_backend(cfg, source_backend)
    stage = build.build_stage(
        resolved.stages[index - 1], cfg.roles[index - 1], index, resolved, backend, general.device, general.threads,
        folder,
    )  # fmt: skip
    if not isinstance(stage, FileStage):  # a path stage is built as one
        raise ModelFileError(f"{where}: derive: onnx needs a path stage")
    feeds = []
    for sample in samples:
        given = stage.feeds(stage.from_sample(sample))
        feeds.append({i.name: given[i.name] for i in stage_cfg.inputs})  # the model's argument order
    expected = [stage.sessions["model"](f) for f in feeds]
    onnx = folder / "model.onnx"
    if not onnx.is_file():
        with atomic_path(onnx, "derived ONNX") as tmp:
            export(backend, Path(source), feeds[0], list(stage_cfg.outputs), dynamic_axes(stage_cfg), Path(tmp))
    runner = onnx_runner()
    if runner is None:
        raise ModelFileError(f"{where}: derive: onnx: no registered backend loads .onnx files as format onnx")
    ort = require_backend(runner)
    ort.set_threads(general.threads)
    spec = ModelSpec(
        path=onnx,
        format="onnx",
        inputs=tuple(TensorInfo(i.name, i.dtype) for i in stage_cfg.inputs),
        outputs=tuple(TensorInfo(n) for n in stage_cfg.outputs),
    )
    session = ort.load(spec, device=general.device, threads=general.threads)
    got = [session(f) for f in feeds]
    figures, refused = gate(list(stage_cfg.outputs), expected, got, stage_cfg.tolerance)
    what = f"{onnx} exported from {source} by {require_exporter(source_backend)[0]}"
    n = len(feeds)
    if refused:
        line = (
            f"{where}: derive: onnx refused: the ONNX file differs from {source_backend} on its first {n} "
            f"sample(s): {'; '.join(refused)} (file {onnx}; tolerance: stage{index}.tolerance)"
        )
    else:
        shown = ", ".join(f"{name} {'identical' if f.get('exact') else short(f)}" for name, f in figures.items())
        line = f"derived {what}; parity with {source_backend} on {n} sample(s): {shown}"
    verdict = {"ok": not refused, "line": line, "file": str(onnx), "source": source, "outputs": figures}
    from speechperf.benchmark.report import write_json_atomic

    write_json_atomic(folder / VERDICT.format(key=gate_key(cfg, stage_cfg)), verdict, "derive verdict")
    return verdict


def main(argv: list[str]) -> int:
    """The child: CONFIG INDEX FOLDER SOURCE (SOURCE: the user's config name, for the messages)."""
    from speechperf import logs
    from speechperf.benchmark.build import stdout_to_stderr
    from speechperf.config import load_config

    config, index, folder, source = argv
    logs.configure(logging.INFO)  # the child's messages reach its stderr, which the parent shows on failure
    with stdout_to_stderr():
        cfg = attrs.evolve(load_config(config), source=source)
        verdict = derive(cfg, int(index), Path(folder))
    _log.info("%s", verdict["line"])
    return 0 if verdict["ok"] else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
