"""The graphs of each stage that a method quantizes, where their files are, and the variant folders and configs.

A stage over a reference model (``model: s2t``) is quantized graph by graph (encoder, decoder step, ...); its variant
is a model folder like the zoo's, with a manifest that says which method made it and how its files load, and the
int8 files at the paths of their zoo format. A variant config is the user's config with that stage pointing at the
folder (``model_dir`` and ``format``), so ``speechperf bench --config <variant>.yaml`` runs the int8 model like any
other. A stage over the user's own file (``path``) is one graph; its variant config points ``path`` at the int8
file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import ModelSpec, TensorInfo, hooks
from speechperf.benchmark.backend_files import files_of
from speechperf.benchmark.hf_stage import LOAD_OPTIONS
from speechperf.config.schema import BenchConfig, StageConfig
from speechperf.errors import SpeechperfError
from speechperf.optimize.hook import QuantizedModel
from speechperf.outputs import write_text_atomic

SILERO = "silero_vad"


@attrs.frozen
class Graph:
    """One quantizable graph of a stage: the session name it runs as, and its fp32 specs (stage format first)."""

    session: str
    specs: tuple[ModelSpec, ...]
    dynamic_axes: dict = attrs.field(factory=dict)
    example: dict | None = None


@attrs.frozen
class StagePlan:
    """How stage ``index`` (1-based) is quantized: its graphs, the model folder they come from (reference models),
    its zoo format, and the files its fp32 form loads (for the size column)."""

    index: int
    role: str
    label: str
    graphs: tuple[Graph, ...]
    fp32_files: tuple[Path, ...]
    folder: Path | None = None
    fmt: str | None = None
    #: A ``model: hf`` stage: its variant is a ``model_dir`` of graph files named after the graphs.
    hf: bool = False


def zoo_formats_on(backend_name: str, variants: bool = False) -> list[str]:
    """The zoo formats that run on a backend: those the zoo builds, and with ``variants`` those only variants have."""
    from speechperf.registry import get_backend
    from speechperf.zoo.build import runnable_formats

    return runnable_formats(get_backend(backend_name), variants)


def plan_stage(index: int, stage_cfg: StageConfig, role: str, backend_name: str) -> StagePlan:
    if stage_cfg.model == "hf":
        return _plan_hf(index, stage_cfg, role, backend_name)
    if stage_cfg.path:
        spec = ModelSpec(
            path=stage_cfg.path,
            format=stage_cfg.format,
            inputs=tuple(TensorInfo(i.name, i.dtype) for i in stage_cfg.inputs),
            outputs=tuple(TensorInfo(n) for n in stage_cfg.outputs),
        )
        return StagePlan(index, role, str(spec.path), (Graph("model", (spec,)),), tuple(files_of(spec)))
    if stage_cfg.model == SILERO:
        from speechperf.adapters.vad import silero_model_spec
        from speechperf.registry import get_backend

        if hooks(get_backend(backend_name)).silero_vad_port is not None:
            raise SpeechperfError(
                f"backend {backend_name!r} runs the silero VAD as its own port of the network, not "
                "the wheel's file; quantize it on a backend that loads the wheel's ONNX or "
                "TorchScript file"
            )
        spec = silero_model_spec(backend_name, Path("."))
        return StagePlan(index, role, SILERO, (Graph("vad", (spec,)),), tuple(files_of(spec)))
    from speechperf.benchmark.reference import zoo_format
    from speechperf.zoo.build import ensure_built, model_spec
    from speechperf.zoo.catalog import get_model

    if stage_cfg.model is None:  # a checked config holds a path or a model
        raise SpeechperfError(f"stage{index} has neither a path nor a model to quantize")
    model = get_model(stage_cfg.model)
    from speechperf.registry import get_backend

    fmt = zoo_format(get_backend(backend_name), stage_cfg.format, f"stage{index}")
    folder = Path(stage_cfg.model_dir) if stage_cfg.model_dir else ensure_built(model.name, stage_cfg.preset)
    order = [fmt] + [f for f in zoo_formats_on(backend_name) if f != fmt]
    graphs, fp32_files = [], []
    for comp in model.components:
        specs = []
        for f in order:
            spec = model_spec(folder, comp.name, f)
            if all(p.exists() for p in files_of(spec)):
                specs.append(spec)
        example = model.example_feeds(comp.name, stage_cfg.preset, 2, comp.test_lengths[1], np.random.default_rng(0))
        graphs.append(Graph(comp.name, tuple(specs), comp.dynamic_axes(), example))
        fp32_files += files_of(model_spec(folder, comp.name, fmt))
    label = f"{model.name}/{stage_cfg.preset}"
    return StagePlan(index, role, label, tuple(graphs), tuple(dict.fromkeys(fp32_files)), folder, fmt)


def _plan_hf(index: int, stage_cfg: StageConfig, role: str, backend_name: str) -> StagePlan:
    """A Hugging Face folder's graphs as the backend runs them: the Transformers modules' factories, or the files
    of its ``model_dir`` (the ONNX export the plan derived for onnxruntime)."""
    from speechperf.benchmark import hf_stage
    from speechperf.registry import get_backend

    specs = hf_stage.graph_specs(stage_cfg, get_backend(backend_name))
    graphs = tuple(Graph(g.name, (specs[g.name],), dict(g.dynamic_axes)) for g in hf_stage.graphs_of(stage_cfg))
    if stage_cfg.model_dir:
        fp32_files = [f for spec in specs.values() for f in files_of(spec)]
    else:  # the modules' weights
        folder = Path(str(stage_cfg.path))
        fp32_files = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin"))
    label = hf_stage.folder_of(stage_cfg).architecture
    return StagePlan(index, role, f"hf:{label}", graphs, tuple(fp32_files), hf=True)


def hf_variant_spec(plan: StagePlan, graph: Graph, model_dir: Path) -> ModelSpec:
    """The spec of graph ``graph``'s quantized file in a ``model: hf`` variant folder."""
    files = sorted(p for p in model_dir.glob(f"{graph.session}.*") if p.name != LOAD_OPTIONS)
    options = json.loads((model_dir / LOAD_OPTIONS).read_text()) if (model_dir / LOAD_OPTIONS).is_file() else {}
    spec = graph.specs[0]
    return ModelSpec(path=files[0], inputs=spec.inputs, outputs=spec.outputs, options=options.get(graph.session, {}))


def variant_format(plan: StagePlan, backend_name: str, quantized: QuantizedModel) -> str:
    """The zoo format a quantized file runs as: the stage's own when the file is of that kind, else the first
    format of this backend whose file has the same suffix."""
    from speechperf.zoo.build import zoo_formats

    suffix = quantized.path.suffix
    formats = zoo_formats(variants=True)
    candidates = [
        f
        for f in zoo_formats_on(backend_name, variants=True)
        if (path := formats[f][1].path) is not None and path.endswith(suffix)
    ]
    if plan.fmt in candidates:
        return plan.fmt
    if not candidates:
        raise SpeechperfError(f"a {suffix} file is no zoo format of backend {backend_name!r}")
    return candidates[0]


def write_variant(
    plan: StagePlan, backend_name: str, method: str, quantized: dict[str, QuantizedModel], folder: Path
) -> tuple[dict, list[Path]]:
    """Move the quantized graphs of a stage into ``folder``; returns the stage keys that load them and the files."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if plan.folder is not None:
        fmt, files = _write_model_folder(plan, plan.folder, backend_name, method, quantized, folder)
        return {"model_dir": str(folder.resolve()), "format": fmt}, files
    if plan.hf:  # graph files named after the graphs, their load options beside them
        files = []
        for name, q in quantized.items():
            for f in q.files:
                files.append(folder / f"{name}{f.suffix}")
                shutil.move(str(f), files[-1])
        options = {name: dict(q.options) for name, q in quantized.items() if q.options}
        if options:
            write_text_atomic(folder / LOAD_OPTIONS, json.dumps(options, indent=2) + "\n", "load options")
        return {"model_dir": str(folder.resolve())}, files
    (q,) = quantized.values()
    silero_file = plan.graphs[0].specs[0].path
    if plan.label == SILERO and silero_file is not None:  # the VAD stage reads the wheel's file name from model_dir
        dest = folder / silero_file.name
        shutil.move(str(q.path), dest)
        return {"model_dir": str(folder.resolve())}, [dest]
    files = []
    for f in q.files:
        files.append(folder / f.name)
        shutil.move(str(f), files[-1])
    return {"path": str(files[0].resolve()), "format": None}, files


def _write_model_folder(
    plan: StagePlan,
    source: Path,
    backend_name: str,
    method: str,
    quantized: dict[str, QuantizedModel],
    folder: Path,
) -> tuple[str, list[Path]]:
    """The quantized graphs of a reference model (built in ``source``) at their zoo paths in ``folder``, with a
    manifest."""
    from speechperf.zoo.build import MANIFEST, read_manifest, zoo_formats

    fmts = {variant_format(plan, backend_name, q) for q in quantized.values()}
    if len(fmts) != 1:
        raise SpeechperfError(f"{method} wrote graphs of different formats ({', '.join(sorted(fmts))})")
    fmt = fmts.pop()
    path = zoo_formats(variants=True)[fmt][1].path
    if path is None:  # variant_format only picks formats with a file path
        raise SpeechperfError(f"zoo format {fmt!r} has no file path to write {method}'s graphs to")
    files = []
    for component, q in quantized.items():
        target = folder / path.format(component=component)
        target.parent.mkdir(parents=True, exist_ok=True)
        for f in q.files:
            dest = target.with_suffix(f.suffix)
            shutil.move(str(f), dest)
            files.append(dest)
    manifest = read_manifest(source)
    manifest["files"] = [
        {"path": p.relative_to(folder).as_posix(), "format": fmt, "bytes": p.stat().st_size} for p in files
    ]
    manifest["quantization"] = {"method": method, "backend": backend_name, "from": str(plan.folder)}
    options = {k: v for q in quantized.values() for k, v in q.options.items()}
    if options:
        manifest["load_options"] = {fmt: options}
    write_text_atomic(folder / MANIFEST, json.dumps(manifest, indent=2) + "\n", "variant manifest")
    return fmt, files


def config_dict(cfg: BenchConfig, backend_name: str) -> dict:
    """The merged config as plain YAML-able data, with the backend fixed, no FLOPs meter, and paths made absolute
    (the variant configs live elsewhere than the user's)."""
    return variant_config(cfg.to_dict(), backend_name)


def variant_config(config: dict, backend_name: str) -> dict:
    """``config_dict`` of a config already plain (``BenchConfig.to_dict``, as a result document keeps it)."""
    data = json.loads(json.dumps(config))
    data["general"]["backend"] = backend_name
    # The table has no FLOPs column (an analytic count ignores the int8 arithmetic anyway), and counting them
    # through a decoding loop costs each run more than its timed passes.
    data["general"]["meters"] = [m for m in data["general"]["meters"] if m != "flops"]
    for key in ("dataset_path", "reference_path", "clean_reference_dir", "dump_speech_waveforms_dir"):
        if data["general"].get(key):
            data["general"][key] = str(Path(data["general"][key]).resolve())
    for stage in (section for name, section in data.items() if name != "general"):  # stage1, stage2, ...
        for key in ("path", "model_dir"):
            if stage.get(key):
                stage[key] = str(Path(stage[key]).resolve())
    return data
