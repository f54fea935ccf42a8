"""The benchmark config classes: one ``GeneralConfig`` for the run and one ``StageConfig`` per model stage.

Every key a YAML config may hold is a field here, with its type, default, allowed values and a help line in the
field's metadata. The loader (``speechperf.config.load``) and the key reference (``speechperf config keys``) are both
generated from these classes, so a key cannot be accepted without being documented or documented without being
accepted.
"""

from __future__ import annotations

from typing import Any

import attrs

#: Model types and, per type, the role of each stage (in order) and how many stages are required.
#: The roles decide how a stage is driven (decoding, synthesis, streaming) and what it hands to the next stage.
MODEL_TYPES: dict[str, tuple[tuple[str, ...], int]] = {
    "S2T": (("s2t",), 1),
    "MT": (("mt",), 1),
    "TTS": (("tts",), 1),
    "S2S": (("s2s",), 1),  # direct speech-to-speech: your own model file (speech in, waveform out)
    "S2UT": (("s2u", "unit_vocoder"), 1),  # the unit vocoder is optional, as in fairseq
    "2StageS2ST": (("s2t", "tts"), 2),
    "3StageS2ST": (("s2t", "mt", "tts"), 3),
    "VAD": (("vad",), 1),
}

DATASET_TYPES = ("generated", "raw", "npz", "npy", "text")
METERS = ("runtime", "memory", "flops")
DEVICES = ("cpu", "cuda")
INPUT_SOURCES = ("audio", "audio_length", "features", "feature_length", "tokens", "token_length")
MAX_STAGES = 3
#: numpy dtypes a user's model file input may declare.
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


def key(
    default: Any,
    help: str,
    kind: str,
    choices: tuple[str, ...] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive: bool = False,
):
    """An attrs field with what the loader checks (``kind``, ``choices``, ``minimum`` / ``maximum``, both bounds
    excluded when ``exclusive``) and the doc line."""
    return attrs.field(
        default=default,
        metadata={
            "help": help,
            "kind": kind,
            "choices": choices,
            "minimum": minimum,
            "maximum": maximum,
            "exclusive": exclusive,
        },
    )


def bounds_text(meta) -> str:
    """The allowed range of a number key, as the docs and the loader's errors both say it: ``> 0 and < 1``."""
    low, high = (">", "<") if meta.get("exclusive") else (">=", "<=")
    parts = [f"{op} {meta[k]:g}" for op, k in ((low, "minimum"), (high, "maximum")) if meta.get(k) is not None]
    return " and ".join(parts)


@attrs.frozen
class InputConfig:
    """One declared input of a user's own model file and which array of the sample feeds it."""

    name: str = key(None, "input name in the model file", "str")
    source: str | None = key(None, "which array of the sample feeds it (or give `value`)", "str?", INPUT_SOURCES)
    dtype: str = key("float32", "numpy dtype the model expects", "str", DTYPES)
    value: Any = key(
        None,
        "instead of `source`: a constant fed on every call, a number or nested list checked "
        "against dtype and the model's shape (e.g. Piper's scales: [0.667, 1.0, 0.8])",
        "array?",
    )


@attrs.frozen
class StageConfig:
    """One model stage. Exactly one of ``model`` (a reference model or ``silero_vad``) and ``path`` is set."""

    model: str | None = key(
        None,
        "reference model by name (see `speechperf zoo list`), or `silero_vad` for the real Silero VAD",
        "str?",
    )
    preset: str = key("base", "size preset of the reference model, built on demand and cached", "str")
    vocoder: str | None = key(
        None,
        "reference mel vocoder turning a TTS stage's mel into a waveform (the model's own default if unset)",
        "str?",
    )
    model_dir: str | None = key(
        None,
        "with `model`: load it from this folder (a built reference model with its manifest, such as a "
        "quantized variant written by `speechperf optimize`) instead of the zoo cache",
        "str?",
    )
    path: str | None = key(
        None,
        "your own model file instead of a reference model: .onnx, TorchScript .pt, or a paddle inference "
        ".json/.pdmodel (run once per sample; its first output is handed on)",
        "str?",
    )
    format: str | None = key(
        None,
        "with `path`: its format when the suffix does not tell (torchscript, export, onnx, paddle); with "
        "`model`: which built format runs (torch-eager, torchscript, paddle-eager, paddle-inference, onnx-torch, "
        "onnx-paddle, or torch-export in a `model_dir` written by `speechperf optimize`; default torch-eager / "
        "paddle-inference / onnx-torch per backend)",
        "str?",
    )
    entry: str | None = key(None, "submodule to call inside a TorchScript `path`", "str?")
    inputs: tuple[InputConfig, ...] = key((), "inputs of `path`: a list of {name, source, dtype}", "inputs")
    outputs: tuple[str, ...] = key((), "output names of `path`, in order", "list[str]")
    beam: int = key(1, "beam size of the decoder; 1 is greedy", "int", minimum=1)
    max_len_a: float = key(0.0, "decoding stops after max_len_a * source_length + max_len_b steps", "float", minimum=0)
    max_len_b: int = key(200, "see max_len_a", "int", minimum=1)
    min_len: int = key(
        1, "decoding: EOS is not allowed before this many tokens (fairseq's --min-len)", "int", minimum=0
    )
    dur_prediction: bool = key(True, "unit vocoder: predict a duration per unit instead of repeating units", "bool")
    output_sample_rate: int | None = key(
        None,
        "with `path` for a tts / unit_vocoder / s2s stage: rate of its output waveform (e.g. 22050 for Piper); "
        "RTF divides by the audio seconds at this rate (default general.sample_rate)",
        "int?",
        minimum=1,
    )
    vad_threshold: float = key(
        0.5, "VAD: speech probability above which a window is speech", "float", minimum=0, maximum=1, exclusive=True
    )
    options: dict | None = key(
        None,
        "backend settings, per backend: {onnxruntime: {graph_optimization_level: basic}, paddle: {api: jit}}; "
        "each backend's keys are listed below and checked for every backend named",
        "options?",
    )


@attrs.frozen
class GeneralConfig:
    """Run-level settings. Stage keys placed in ``general`` are defaults for every stage, as in fairseq."""

    model_type: str = key("S2T", "what is benchmarked; decides the stages", "str", tuple(MODEL_TYPES))
    backend: str | None = key(None, "backend to run on (`speechperf backends`); --backend overrides it", "str?")
    device: str = key("cpu", "device the models run on", "str", DEVICES)
    threads: int = key(1, "intra-op threads, pinned the same on every backend", "int", minimum=1)
    seed: int = key(1, "seed for generated data, subsets and the frameworks", "int", minimum=0)
    dataset_type: str = key("generated", "format of dataset_path (generated needs no path)", "str", DATASET_TYPES)
    dataset_path: str | None = key(None, "dataset file: raw TSV manifest, .npz, fairseq .npy or a text file", "str?")
    dataset_size: int | None = key(None, "use only the first N samples", "int?", minimum=1)
    generated_seconds: tuple[float, ...] = key(
        (1.0, 3.0),
        "generated dataset: [shortest, longest] audio in seconds (text length scales with it)",
        "list[float]",
    )
    unsafe_pickle_runs_code: bool = key(
        False,
        "allow fairseq's pickled .npy datasets; unpickling runs code from the file, use only files you trust",
        "bool",
    )
    sample_rate: int = key(16000, "rate the models take audio at; raw audio is resampled to it", "int", minimum=1)
    feat_dim: int = key(80, "feature dimension of .npz/.npy feature datasets", "int", minimum=1)
    warmup: int = key(2, "untimed forwards on the first sample before measuring", "int", minimum=0)
    warmup_per_shape: bool = key(
        False,
        "also warm up (max(1, warmup) untimed forwards) every sample whose input shapes a stage has not run yet, "
        "so the timed repeats hold no first-call-per-shape cost; false is fairseq's design (first sample only)",
        "bool",
    )
    repeat: int = key(1, "timed forwards per sample", "int", minimum=1)
    meters: tuple[str, ...] = key(METERS, "what to measure", "list[str]", METERS)
    dump_speech_waveforms_dir: str | None = key(
        None, "write each final waveform to this folder (created if missing)", "str?"
    )
    dump_waveform_file_prefix: str = key("", "dumped files are named {prefix}_{i}_pred.wav", "str")
    target_sr: int = key(16000, "rate the dumped waveforms are resampled to", "int", minimum=1)


@attrs.frozen
class BenchConfig:
    """A whole config after merging: defaults < general < stageN."""

    general: GeneralConfig
    stages: tuple[StageConfig, ...]
    source: str = "<built-in>"

    @property
    def roles(self) -> tuple[str, ...]:
        return MODEL_TYPES[self.general.model_type][0][: len(self.stages)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"general": attrs.asdict(self.general)}
        for i, stage in enumerate(self.stages, 1):
            out[f"stage{i}"] = attrs.asdict(stage)
        return out


def field_names(cls) -> list[str]:
    return [f.name for f in attrs.fields(cls)]


GENERAL_KEYS = field_names(GeneralConfig)
STAGE_KEYS = field_names(StageConfig)
