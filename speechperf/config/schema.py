"""The benchmark config classes: one ``GeneralConfig`` for the run and one ``StageConfig`` per model stage.

Every key a YAML config may hold is a field here, with its type, default, allowed values and a help line in the
field's metadata. The loader (``speechperf.config.load``) and the key reference (``speechperf config keys``) are both
generated from these classes, so a key cannot be accepted without being documented or documented without being
accepted.
"""

from __future__ import annotations

from typing import Any

import attrs

from speechperf.adapters import features

# ``key`` makes every checked field; a backend's ``options_class`` imports it from here (its documented home).
from speechperf.values import key

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

DATASET_TYPES = ("generated", "raw", "fairseq_s2t", "npz", "npy", "text")
METERS = ("runtime", "memory", "flops", "quality")
#: The meters a run takes when none are named. ``quality`` is not among them but is still on by default where the
#: dataset has references and scoring needs no model (speechperf.meters.quality).
DEFAULT_METERS = ("runtime", "memory", "flops")
DEVICES = ("cpu", "cuda")
INPUT_SOURCES = ("audio", "audio_length", "features", "feature_length", "tokens", "token_length")
MAX_STAGES = 3
#: numpy dtypes a user's model file input may declare.
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


#: ``layout`` of an input: the order of its axes in letters, B batch (size 1), T time (frames, samples or tokens),
#: C channels (features' bins; a mono waveform's or a token sequence's channel is size 1). An input fed from the
#: sample has B + its own axes by default (BTC features, BT audio and tokens); a letter it lacks is added with size
#: 1, and leaving B out feeds it without a batch axis. Names for the two common feature layouts:
LAYOUT_NAMES = {"channels_first": "BCT", "channels_last": "BTC"}


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
    layout: str | None = key(
        None,
        "order of the axes fed: letters B (batch, size 1), T (time), C (channels), e.g. BCT for a vocoder's "
        "[1, 80, frames]; channels_first = BCT, channels_last = BTC; default B + the source's own axes (BTC "
        "features, BT audio and tokens); checked at load against the shape the model declares",
        "str?",
    )


#: Feature presets of a stage's ``features:``, each with its source (kept beside the front-end they configure).
FEATURE_PRESETS = features.PRESETS


@attrs.frozen
class FeatureConfig:
    """How a stage makes the log-mel ``features`` its model file takes (``speechperf.adapters.features.log_mel``).
    The defaults are the ``kaldi-fbank`` preset, what every stage was fed before these settings existed."""

    preset: str = key(
        "kaldi-fbank",
        "the settings of a model family (table below); keys beside it replace its values",
        "str",
        tuple(FEATURE_PRESETS),
    )
    sample_rate: int = key(16000, "rate the audio is resampled to before the features are made", "int", minimum=1)
    n_mels: int = key(80, "mel bins (the model's feature or channel size)", "int", minimum=1)
    n_fft: int = key(512, "FFT size", "int", minimum=2)
    win_length: int = key(400, "window length in samples (<= n_fft)", "int", minimum=2)
    hop_length: int = key(
        160, "samples between frames: a vocoder gives back hop_length samples per frame", "int", minimum=1
    )
    window: str = key(
        "povey",
        "window: povey (Kaldi), hann or hamming (periodic, as torch and librosa)",
        "str",
        ("povey", "hann", "hamming"),
    )
    fmin: float = key(20.0, "lowest filter edge in Hz", "float", minimum=0)
    fmax: float | None = key(None, "highest filter edge in Hz (null: half the sample rate)", "float?", minimum=0)
    mel_scale: str = key(
        "htk",
        "htk: 1127 ln(1 + f / 700), peaks of 1 (Kaldi, torchaudio); slaney: librosa's default scale and area normalisation (HiFi-GAN, Whisper)",
        "str",
        ("htk", "slaney"),
    )
    frontend: str = key(
        "kaldi",
        "kaldi: compute-fbank framing (snip edges, DC removal, pre-emphasis 0.97, triangles on the mel scale); stft: librosa / torch.stft (padding, window centred in n_fft, librosa's filters)",
        "str",
        ("kaldi", "stft"),
    )
    power: float = key(2.0, "spectrum exponent: 2 power, 1 magnitude (HiFi-GAN)", "float", minimum=0, exclusive=True)
    padding: str = key(
        "none",
        "stft: center (n_fft // 2 each side, 1 + n // hop frames), same ((n_fft - hop) // 2, n // hop frames, HiFi-GAN), none; kaldi: none",
        "str",
        ("center", "same", "none"),
    )
    log: str = key("ln", "logarithm: ln or log10", "str", ("ln", "log10"))
    clamp: float = key(
        1.1920928955078125e-07,
        "floor applied before the log (HiFi-GAN 1e-5, Whisper 1e-10)",
        "float",
        minimum=0,
        exclusive=True,
    )
    normalize: str = key(
        "utterance",
        "after the log: utterance (mean / variance per bin, fairseq S2T), whisper (floor at max - 8, then (x + 4) / 4) or none",
        "str",
        ("none", "utterance", "whisper"),
    )
    num_frames: int | None = key(None, "pad with silence or cut to this many frames (Whisper: 3000)", "int?", minimum=1)

    def settings(self) -> dict[str, Any]:
        """Keyword arguments of ``speechperf.adapters.features.log_mel``."""
        return {k: v for k, v in attrs.asdict(self).items() if k != "preset"}


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
    path: str | dict | None = key(
        None,
        "your own model file instead of a reference model: .onnx, TorchScript .pt / .ts / .jit, or a paddle "
        "inference .json/.pdmodel (run once per sample; its first output is handed on); or a file per backend, "
        "{torch: enc.pt, paddle: enc.json, onnxruntime: enc.onnx}: each backend runs its own file",
        "path?",
    )
    derive: str | None = key(
        None,
        "with `path`: make the onnxruntime file with the framework's own exporter (`onnx`: torch.onnx.export "
        "from the torch file, or paddle2onnx from the paddle file), cached by the source's content hash and used "
        "only if its outputs match the source's on the first samples",
        "str?",
        ("onnx",),
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
    features: FeatureConfig = key(
        FeatureConfig(),
        "with `path`: how the log-mel `features` of its inputs are made: a preset name (kaldi-fbank, hifigan-22k, "
        "hifigan-16k, whisper) or a mapping of the settings below ({preset: hifigan-22k, n_mels: 100})",
        "features",
    )
    tolerance: dict | None = key(
        None,
        "float outputs: limits past which compare's parity, optimize and a `derive`d file's gate call a sample "
        "different, per output name (`mask`, `waveform`, or `*` for all): {mask: {max_rel: 0.1, snr_db: 20}}; "
        "keys max_rel (default 1e-3), snr_db (40), cosine (0.999), max_abs (no limit)",
        "tolerance?",
    )
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
    dataset_path: str | None = key(
        None, "dataset file: raw TSV manifest, fairseq speech_to_text TSV, .npz, fairseq .npy or a text file", "str?"
    )
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
    reference_path: str | None = key(
        None,
        "references for the quality meter, one line per sample in dataset order: transcripts or translations "
        "(text), or VAD segments as `start-end` seconds separated by spaces",
        "str?",
    )
    language: str = key(
        "en",
        "language of the references (a dataset's tgt_lang wins); English is scored after Whisper's "
        "English normalizer, others after its basic one",
        "str",
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
    meters: tuple[str, ...] = key(
        DEFAULT_METERS,
        "what to measure; `quality` scores the outputs against references in an untimed pass after timing (on by "
        "default where the dataset has references and no ASR is needed; see docs/benchmark.md)",
        "list[str]",
        METERS,
    )
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
        """Every key with its value, as the loader reads it back: ``config show`` prints this, optimize writes it,
        and ``config check`` accepts it. An input's unset keys are left out: it takes exactly one of ``source``
        and ``value``, so writing the other as null would be refused."""
        out: dict[str, Any] = {"general": attrs.asdict(self.general)}
        for i, stage in enumerate(self.stages, 1):
            out[f"stage{i}"] = attrs.asdict(stage)
            out[f"stage{i}"]["inputs"] = [
                {k: v for k, v in attrs.asdict(one).items() if v is not None} for one in stage.inputs
            ]
        return out


def field_names(cls) -> list[str]:
    return [f.name for f in attrs.fields(cls)]


GENERAL_KEYS = field_names(GeneralConfig)
STAGE_KEYS = field_names(StageConfig)
