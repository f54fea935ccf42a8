"""Stages over a Hugging Face ``save_pretrained`` folder (``model: hf``, ``path: FOLDER``; docs/benchmark.md,
"Hugging Face model folders").

What the folder is comes from ``config.json``'s ``architectures`` (speechperf.adapters.hf): a CTC model (Wav2Vec2,
HuBERT, Wav2Vec2-Conformer, MMS) runs as one graph, ``ctc``; a Whisper checkpoint as two, ``encoder`` and
``decoder``. Where each graph comes from, per backend:

- a backend that runs Transformers modules (``transformers_factories``: torch) loads them from the folder (eager,
  or its ``compile`` option);
- the backend that runs ``.onnx`` files (onnxruntime) runs an export of those modules made by that backend's
  ``export_onnx`` (torch.onnx.export) and kept only past the parity gate of ``derive``
  (speechperf.benchmark.hf_derive); the plan puts the derived folder in ``model_dir``;
- ``model_dir``: a folder of graph files named after the graphs (``ctc.onnx``, ``encoder.pt2``...), such as an int8
  variant written by ``speechperf optimize``; the folder (``path``) still gives the processor and vocabulary;
- any other backend has no route, said in one line before anything runs (``route_refusal``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import ModelSpec, Session, TensorInfo, hooks
from speechperf.benchmark.stage import Stage, StageError, StageIO
from speechperf.config.schema import StageConfig
from speechperf.data.audio import resample
from speechperf.data.sample import Sample
from speechperf.errors import ModelFileError

HF = "hf"
#: Load options of each graph of a ``model_dir`` (a quantized variant's, e.g. pt2e's compile), graph -> options.
LOAD_OPTIONS = "load_options.json"


@attrs.frozen
class HfGraph:
    """One graph of a folder's model: its name (the session's and the file's), the factory in the backend's
    ``transformers_factories`` module, its inputs and outputs, and the axes that stay dynamic."""

    name: str
    factory: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[str, ...]
    dynamic_axes: Mapping[str, Mapping[int, str]]


GRAPHS: dict[str, tuple[HfGraph, ...]] = {
    "ctc": (
        HfGraph(
            "ctc",
            "ctc",
            (TensorInfo("input_values", "float32", ("batch", "samples")),),
            ("logits",),
            {"input_values": {0: "batch", 1: "samples"}},
        ),
    ),
    "whisper": (
        HfGraph(
            "encoder",
            "whisper_encoder",
            (TensorInfo("input_features", "float32", ("batch", None, None)),),
            ("encoder_out",),
            {"input_features": {0: "batch"}},
        ),
        HfGraph(
            "decoder",
            "whisper_decoder",
            (
                TensorInfo("decoder_input_ids", "int64", ("batch", "tokens")),
                TensorInfo("encoder_out", "float32", ("batch", None, None)),
            ),
            ("logits",),
            {"decoder_input_ids": {0: "batch", 1: "tokens"}, "encoder_out": {0: "batch"}},
        ),
    ),
}


def is_hf(stage: StageConfig) -> bool:
    return stage.model == HF


def folder_of(stage: StageConfig):
    """The stage's folder read (speechperf.adapters.hf.HfFolder); a one-line error when it is none."""
    from speechperf.adapters.hf import HfFolder

    if not isinstance(stage.path, str):
        raise ModelFileError(f"model: hf takes one folder as path (a save_pretrained folder); got {stage.path!r}")
    return HfFolder.read(stage.path)


def check_processor(stage: StageConfig) -> None:
    """The folder's processor files read as the stage will read them (no framework), so that a folder saved without
    its processor is refused before anything runs."""
    from speechperf.adapters.hf import CtcText, WhisperText

    folder = folder_of(stage)
    if folder.kind == "ctc":
        CtcText.from_folder(folder)
    else:  # and the prompt of the stage's src_lang and task
        WhisperText.from_folder(folder).prompt(stage.src_lang, stage.task)


def graphs_of(stage: StageConfig) -> tuple[HfGraph, ...]:
    return GRAPHS[folder_of(stage).kind]


def runs_modules(backend) -> bool:
    return hooks(backend).transformers_factories is not None


def derives_for(stage: StageConfig, backend_name: str) -> bool:
    """Whether ``backend_name`` runs the folder's ONNX export: it is the backend that runs ``.onnx`` files and the
    stage names no ``model_dir`` of its own."""
    from speechperf.benchmark.backend_files import onnx_runner

    return not stage.model_dir and backend_name == onnx_runner()


def route_refusal(stage: StageConfig, backend, where: str) -> str | None:
    """Why ``backend`` cannot run this folder, in one line; None where it can."""
    from speechperf.benchmark.backend_files import onnx_runner

    if stage.model_dir and _graph_files(stage, backend):
        return None
    if runs_modules(backend) or backend.name == onnx_runner():
        _require_transformers()  # the modules, or the export made from them
        return None
    folder = folder_of(stage)
    return (
        f"{where}: model: hf ({folder.architecture}): backend {backend.name!r} has no route for it: Transformers "
        f"modules are torch code, {backend.name} runs no ONNX file, and no maintained converter turns the export "
        f"into its own format ({NO_CONVERTER}); run this stage on a backend that runs it (torch) or its ONNX "
        "export (onnxruntime)"
    )


def _require_transformers() -> None:
    import importlib.util

    from speechperf.extras import MissingExtraError, missing_message

    if importlib.util.find_spec("transformers") is None:
        raise MissingExtraError(missing_message("transformers", "model: hf"))


#: What was tried for paddle (tests/test_hf.py checks the line that says it): x2paddle 1.6.0's onnx2paddle on the
#: opset-17 exports of a Wav2Vec2ForCTC and a Whisper folder (tests/hf_folders.py) stops at "1 OPs are not supported
#: yet: LayerNormalization" (it converts opsets 7-15). An opset-15 export and its PyTorch route were not tried.
NO_CONVERTER = "X2Paddle 1.6.0, its last release, converts ONNX opsets 7-15 and rejects the export's LayerNormalization"


def _graph_files(stage: StageConfig, backend) -> dict[str, Path]:
    """graph -> the file of ``model_dir`` this backend loads for it (by suffix)."""
    suffixes = hooks(backend).suffix_formats
    found = {}
    for graph in graphs_of(stage):
        for suffix in suffixes:
            file = Path(stage.model_dir or "") / f"{graph.name}{suffix}"
            if file.is_file():
                found[graph.name] = file
                break
    return found


def graph_specs(stage: StageConfig, backend, options: Mapping | None = None) -> dict[str, ModelSpec]:
    """graph -> what ``backend`` loads for it: a file of ``model_dir``, else the Transformers module's factory."""
    folder = folder_of(stage)
    graphs = GRAPHS[folder.kind]
    options = dict(options or {})
    if stage.model_dir:
        files = _graph_files(stage, backend)
        missing = [g.name for g in graphs if g.name not in files]
        if missing:
            raise ModelFileError(
                f"model_dir {stage.model_dir} has no file of graph {missing[0]!r} that backend {backend.name!r} "
                f"loads ({', '.join(f'{missing[0]}{s}' for s in hooks(backend).suffix_formats)})"
            )
        loads = Path(stage.model_dir) / LOAD_OPTIONS
        extra = json.loads(loads.read_text(encoding="utf-8")) if loads.is_file() else {}
        return {
            g.name: ModelSpec(
                path=files[g.name],
                inputs=g.inputs,
                outputs=tuple(TensorInfo(n) for n in g.outputs),
                options={**extra.get(g.name, {}), **options},
            )
            for g in graphs
        }
    module = hooks(backend).transformers_factories
    if module is None:
        raise ModelFileError(f"backend {backend.name!r} runs no Transformers module")
    return {
        g.name: ModelSpec(
            factory=f"{module}:{g.factory}",
            factory_kwargs={"folder": str(folder.path)},
            inputs=g.inputs,
            outputs=tuple(TensorInfo(n) for n in g.outputs),
            options=options,
        )
        for g in graphs
    }


def hf_stage(stage_cfg: StageConfig, role: str, where: str, backend, device: str, threads: int) -> Stage:
    """The stage over the folder, its graphs loaded on ``backend``."""
    from speechperf.benchmark.reference import backend_options

    if role != "s2t":
        raise StageError(f"{where}: model: hf runs speech recognition (an s2t stage); this is the {role} stage")
    refusal = route_refusal(stage_cfg, backend, where)
    if refusal:
        raise StageError(refusal)
    specs = graph_specs(stage_cfg, backend, backend_options(stage_cfg, backend))
    sessions = {name: backend.load(spec, device=device, threads=threads) for name, spec in specs.items()}
    folder = folder_of(stage_cfg)
    label = f"hf:{folder.architecture} {folder.path.name}"
    if folder.kind == "ctc":
        return HfCtcStage(label, sessions, folder)
    return HfWhisperStage(label, sessions, folder, stage_cfg)


def _audio(sample: Sample, rate: int, label: str) -> np.ndarray:
    if sample.audio is None:
        raise StageError(f"sample {sample.id!r} is {sample.kind}; {label} takes audio (a raw or generated dataset)")
    return resample(sample.audio, sample.audio_rate, rate)


class HfCtcStage(Stage):
    """A CTC model: the feature extractor's input values, the logits, greedy CTC with the folder's vocabulary."""

    role = "s2t"
    batch_refusal = "its inputs carry no attention mask speechperf sets, so padding could change its outputs"

    def __init__(self, label: str, sessions: Mapping[str, Session], folder):
        from speechperf.adapters.hf import CtcText

        self.label, self.sessions = label, dict(sessions)
        self.text = CtcText.from_folder(folder)

    def from_sample(self, sample: Sample) -> StageIO:
        audio = _audio(sample, self.text.sample_rate, self.label)
        return {"input_values": self.text.input_values(audio), "seconds": len(audio) / self.text.sample_rate}

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        logits = np.asarray(sessions["ctc"]({"input_values": inp["input_values"]})["logits"])
        ids = self.text.ids(logits)
        return {"tokens": ids, "text": self.text.text(ids), "outputs": {"logits": logits}}

    def batch_length(self, inp: StageIO) -> int:
        return int(inp["input_values"].shape[1])


class HfWhisperStage(Stage):
    """A Whisper checkpoint: the processor's log-mel, greedy generation from the folder's generation config."""

    role = "s2t"
    batch_refusal = "it has no batched forward yet"
    padded_to_s = 30.0

    def __init__(self, label: str, sessions: Mapping[str, Session], folder, stage_cfg: StageConfig):
        from speechperf.adapters.hf import WhisperText

        self.label, self.sessions = label, dict(sessions)
        self.text = WhisperText.from_folder(folder)
        self.src_lang, self.task = stage_cfg.src_lang, stage_cfg.task
        self.text.prompt(self.src_lang, self.task)  # a language the model lacks fails now, in one line
        self.max_len_a, self.max_len_b = stage_cfg.max_len_a, stage_cfg.max_len_b

    def from_sample(self, sample: Sample) -> StageIO:
        audio = _audio(sample, self.text.sample_rate, self.label)
        return {"features": self.text.features(audio), "seconds": len(audio) / self.text.sample_rate}

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        from speechperf.adapters.decoding import max_length

        limit = max_length(int(round(min(inp["seconds"], 30.0) * 50)), self.max_len_a, self.max_len_b)
        ids = self.text.generate(
            sessions["encoder"], sessions["decoder"], inp["features"], limit, self.src_lang, self.task
        )
        return {"tokens": ids, "text": self.text.text(ids), "language": self.src_lang or "en"}

    def batch_length(self, inp: StageIO) -> int:
        return int(round(inp["seconds"] * 1000))
