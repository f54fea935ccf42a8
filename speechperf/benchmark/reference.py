"""Stages over the reference models of ``speechperf.zoo``, built on demand and cached.

Each stage drives a model's graphs (``encoder`` + ``decoder_step``, TTS ``encoder`` + ``decoder`` + a mel vocoder,
the unit vocoder's ``duration`` + ``generator``) with the numpy adapters shared by every backend: log-mel features
(``speechperf.adapters.features.fbank``), greedy / beam decoding (``speechperf.adapters.decoding.generate``) and length regulation
(``speechperf.adapters.length``). So the same model decodes the same way on torch, paddle and onnxruntime.

The reference models have seeded random weights and no trained vocabulary. Text is mapped to token ids by a fixed
character code (``text_to_tokens``), and token ids handed from one model to the next are folded into the next
model's vocabulary (``fold_tokens``); both are deterministic, so every backend sees the same ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from speechperf.backend import Session, hooks
from speechperf.benchmark.stage import Stage, StageError, StageIO, pad_stack
from speechperf.data.audio import resample
from speechperf.data.sample import Sample

# fairseq's special symbols, as in speechperf.zoo.catalog.
BOS, PAD, EOS, UNK = 0, 1, 2, 3
NUM_SPECIAL = 4
SPEECH_RATE = 16000  # every reference speech model takes 16 kHz audio as an 80-bin log-mel
#: TTS: at most this many mel frames per input token (random weights can predict anything).
MAX_FRAMES_PER_TOKEN = 20
#: Unit vocoder: at most this many repeats per unit.
MAX_REPEATS_PER_UNIT = 10

#: Roles -> reference models that can fill them.
ROLE_MODELS = {
    "s2t": ("s2t", "whisper-tiny-en", "whisper-base"),
    "s2u": ("s2ut",),
    "mt": ("mt", "marian-tiny-en-pt", "marian-tiny-pt-en"),
    "tts": ("tts", "piper-joe-medium"),
    "unit_vocoder": ("unit_vocoder",),
}
DEFAULT_VOCODER = "mel_vocoder"
#: TTS models that synthesize the waveform themselves (no separate vocoder stage model).
END_TO_END_TTS = ("piper-joe-medium",)


def text_to_tokens(text: str, vocab_size: int) -> np.ndarray:
    """Token ids of ``text``: one per character, folded into the non-special part of the vocabulary."""
    span = vocab_size - NUM_SPECIAL
    ids = [NUM_SPECIAL + (ord(c) % span) for c in text.strip()] or [UNK]
    return np.array(ids, dtype=np.int64)


def fold_tokens(tokens: np.ndarray, vocab_size: int) -> np.ndarray:
    """Ids from another model's vocabulary folded into this one's (specials dropped); UNK for an empty input."""
    tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
    tokens = tokens[tokens >= NUM_SPECIAL]
    if tokens.size == 0:
        return np.array([UNK], dtype=np.int64)
    return NUM_SPECIAL + (tokens - NUM_SPECIAL) % (vocab_size - NUM_SPECIAL)


def log_mel(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """(frames, 80) log-mel features of mono audio, through the shared adapter."""
    from speechperf.adapters import features

    audio = resample(audio, sample_rate, SPEECH_RATE)
    # Utterance-level mean/variance normalisation, as fairseq's S2T recipes apply to their filterbanks.
    return features.fbank(audio, SPEECH_RATE, normalize=True)


class Seq2SeqStage(Stage):
    """S2T, S2U and MT: an encoder call, then an autoregressive decoding loop over ``decoder_step``."""

    def __init__(self, role: str, label: str, sessions: Mapping[str, Session], hparams, stage_cfg):
        self.role, self.label, self.sessions = role, label, dict(sessions)
        self.vocab_size = hparams.vocab_size
        self.beam = stage_cfg.beam
        self.max_len_a, self.max_len_b = stage_cfg.max_len_a, stage_cfg.max_len_b
        self.min_len = stage_cfg.min_len

    def from_sample(self, sample: Sample) -> StageIO:
        if self.role == "mt":
            if sample.tokens is not None:
                return {"tokens": fold_tokens(sample.tokens, self.vocab_size)}
            if sample.text is None:
                raise StageError(f"sample {sample.id!r} is {sample.kind}; the MT stage takes text or tokens")
            return {"tokens": text_to_tokens(sample.text, self.vocab_size)}
        if sample.features is not None:
            return {"features": sample.features}
        if sample.audio is None:
            raise StageError(f"sample {sample.id!r} is {sample.kind}; the {self.role} stage takes audio or features")
        return {
            "features": log_mel(sample.audio, sample.audio_rate),
            "seconds": len(sample.audio) / sample.audio_rate,
        }

    def from_previous(self, output: StageIO) -> StageIO:
        if self.role != "mt" or "tokens" not in output:
            raise StageError(f"stage {self.label} ({self.role}) cannot take {sorted(output)} from a previous stage")
        return {"tokens": fold_tokens(output["tokens"], self.vocab_size)}

    #: batches: sources are padded (PAD tokens, zero frames) and their lengths fed; every graph masks by them
    batch_refusal = None

    def encoder_feeds(self, inps: Sequence[StageIO]) -> dict[str, np.ndarray]:
        """The encoder's feeds of a batch of inputs, padded to the longest, with their lengths."""
        if self.role == "mt":
            tokens, lengths = pad_stack([inp["tokens"] for inp in inps], PAD)
            return {"src_tokens": tokens, "src_lengths": lengths}
        features, lengths = pad_stack([inp["features"].astype(np.float32) for inp in inps], 0.0)
        return {"features": features, "feature_lengths": lengths}

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        return self.run_batch(sessions, [inp])[0]

    def run_batch(self, sessions: Mapping[str, Session], inps: Sequence[StageIO]) -> list[StageIO]:
        from speechperf.adapters.decoding import generate

        feeds = self.encoder_feeds(inps)
        lengths = "src_lengths" if self.role == "mt" else "feature_lengths"
        step = min_len_step(sessions["decoder_step"], self.min_len)
        hypotheses = generate(
            sessions["encoder"],
            step,
            feeds,
            lengths,
            beam=self.beam,
            max_len_a=self.max_len_a,
            max_len_b=self.max_len_b,
        )
        outputs = []
        for hypothesis in hypotheses:
            ids = np.asarray(hypothesis, dtype=np.int64).reshape(-1)
            ids = ids[ids >= NUM_SPECIAL]
            outputs.append({"units": ids - NUM_SPECIAL} if self.role == "s2u" else {"tokens": ids})
        return outputs


def min_len_step(decoder_step, min_len: int):
    """``decoder_step`` with EOS forbidden before ``min_len`` tokens, as fairseq's SequenceGenerator does
    (``lprobs[:, eos] = -inf`` while ``step < min_len``; its default min_len 1 never yields an empty hypothesis).
    Random-weight models otherwise often emit EOS first, and an empty transcript shows nothing."""
    if min_len < 1:
        return decoder_step

    def step(feeds):
        out = decoder_step(feeds)
        if feeds["tokens"].shape[1] <= min_len:  # the prefix holds the leading EOS plus `step` tokens
            log_probs = np.array(out["log_probs"], dtype=np.float32)
            log_probs[:, EOS] = -np.inf
            out = {**out, "log_probs": log_probs}
        return out

    return step


class TTSStage(Stage):
    """FastSpeech2-like TTS: encoder -> durations -> length regulation -> decoder -> mel -> mel vocoder."""

    role = "tts"
    batch_refusal = (
        "its encoder and decoder take no lengths (padding would enter their attention) and its vocoder's "
        "convolutions would read the padding into each waveform's last samples"
    )

    def __init__(self, label: str, sessions: Mapping[str, Session], hparams, vocoder_hparams):
        self.label, self.sessions = label, dict(sessions)
        self.vocab_size = hparams.vocab_size
        self.sample_rate = vocoder_hparams.sample_rate

    def from_sample(self, sample: Sample) -> StageIO:
        if sample.tokens is not None:
            return {"tokens": fold_tokens(sample.tokens, self.vocab_size)}
        if sample.text is None:
            raise StageError(f"sample {sample.id!r} is {sample.kind}; the TTS stage takes text or tokens")
        return {"tokens": text_to_tokens(sample.text, self.vocab_size)}

    def from_previous(self, output: StageIO) -> StageIO:
        if "tokens" not in output:
            raise StageError(f"stage {self.label} (tts) takes tokens; the previous stage gave {sorted(output)}")
        return {"tokens": fold_tokens(output["tokens"], self.vocab_size)}

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        from speechperf.adapters.length import durations_from_log, regulate

        tokens = inp["tokens"][None]
        encoded = sessions["encoder"]({"tokens": tokens})
        durations = durations_from_log(encoded["log_durations"], max_total=MAX_FRAMES_PER_TOKEN * tokens.shape[1])
        hidden, _ = regulate(encoded["hidden"], durations)
        mel = sessions["decoder"]({"hidden": hidden})["mel"]
        waveform = sessions["vocoder"]({"mel": mel})["waveform"]
        return {"waveform": waveform.reshape(-1), "sample_rate": self.sample_rate}


class UnitVocoderStage(Stage):
    """CodeHiFiGAN-like: units -> (predicted durations -> repeated units) -> waveform."""

    role = "unit_vocoder"
    batch_refusal = (
        "its duration predictor and generator take no lengths, so padding would enter their convolutions and "
        "change each waveform's last samples"
    )

    def __init__(self, label: str, sessions: Mapping[str, Session], hparams, dur_prediction: bool):
        self.label, self.sessions = label, dict(sessions)
        self.num_units = hparams.num_units
        self.sample_rate = hparams.sample_rate
        self.dur_prediction = dur_prediction

    def from_previous(self, output: StageIO) -> StageIO:
        if "units" not in output:
            raise StageError(f"stage {self.label} (unit vocoder) takes units; the previous stage gave {sorted(output)}")
        units = np.asarray(output["units"], dtype=np.int64) % self.num_units
        return {"units": units if units.size else np.zeros(1, dtype=np.int64)}

    def from_sample(self, sample: Sample) -> StageIO:
        if sample.tokens is None:
            raise StageError(f"sample {sample.id!r} is {sample.kind}; the unit vocoder takes units (integer arrays)")
        return {"units": np.asarray(sample.tokens, dtype=np.int64) % self.num_units}

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        from speechperf.adapters.length import durations_from_log, regulate

        units = inp["units"][None]
        if self.dur_prediction:
            # As fairseq's CodeHiFiGAN with duration prediction: runs of a unit collapse to one, whose duration
            # is then predicted.
            from speechperf.adapters.units import deduplicate

            units = deduplicate(inp["units"])[None]
            log_d = sessions["duration"]({"units": units})["log_durations"]
            durations = durations_from_log(log_d, max_total=MAX_REPEATS_PER_UNIT * units.shape[1])
            units, _ = regulate(units, durations)
        waveform = sessions["generator"]({"units": units})["waveform"]
        return {"waveform": waveform.reshape(-1), "sample_rate": self.sample_rate}


def backend_options(stage_cfg, backend) -> dict:
    """The stage's ``options`` for this backend (see speechperf.backend.options)."""
    return dict((stage_cfg.options or {}).get(backend.name) or {})


def reference_stage(stage_cfg, role: str, where: str, backend, device: str, threads: int) -> Stage:
    """Build (or take from the cache) the stage's reference model(s) and load their graphs on ``backend``."""
    from speechperf.zoo.catalog import get_model

    allowed = ROLE_MODELS[role]
    if stage_cfg.model not in allowed:
        raise StageError(
            f"{where}: model {stage_cfg.model!r} cannot be the {role} stage; allowed: "
            f"{', '.join(allowed)} (or your own file as `path`)"
        )
    model = get_model(stage_cfg.model)
    preset = stage_cfg.preset
    hparams = model.hparams(preset)
    label = f"{model.name}/{preset}"
    vocoder_name = stage_cfg.vocoder or DEFAULT_VOCODER

    options = backend_options(stage_cfg, backend)

    def sessions_in(fmt: str | None) -> dict[str, Session]:
        sessions = load_sessions(model.name, preset, backend, device, threads, fmt, where, options, stage_cfg.model_dir)
        if role == "tts" and model.name not in END_TO_END_TTS:
            sessions["vocoder"] = load_sessions(vocoder_name, preset, backend, device, threads, fmt, where, options)[
                "generator"
            ]
        return sessions

    sessions = sessions_in(stage_cfg.format)
    stage: Stage
    if "cross_kv" in sessions:  # a Whisper model (speechperf.zoo.whisper): its own features and cached decoding
        from speechperf.benchmark.whisper_stage import WhisperStage

        stage = WhisperStage(label, sessions, stage_cfg)
    elif model.name in END_TO_END_TTS:  # Piper VITS (speechperf.zoo.piper): phonemes in, waveform out
        from speechperf.benchmark.piper_stage import PiperStage

        stage = PiperStage(label, sessions, hparams)
    elif role == "mt" and "positions" in model.component("decoder_step").input_names:  # Marian: SSRU state
        # (speechperf.zoo.marian); only an MT model is asked: the reference TTS and vocoders have no decoder_step
        from speechperf.benchmark.marian_stage import MarianStage

        stage = MarianStage(label, sessions, hparams, stage_cfg)
    elif role in ("s2t", "s2u", "mt"):
        stage = Seq2SeqStage(role, label, sessions, hparams, stage_cfg)
    elif role == "tts":
        stage = TTSStage(f"{label}+{vocoder_name}", sessions, hparams, get_model(vocoder_name).hparams(preset))
    else:
        stage = UnitVocoderStage(label, sessions, hparams, stage_cfg.dur_prediction)
    counted_as = zoo_format_of(backend, stage_cfg.format, where).counted_as
    from speechperf.zoo.build import runnable_formats

    if counted_as is not None and counted_as in runnable_formats(backend):
        stage.flops_twin = lambda: sessions_in(counted_as)
    return stage


def zoo_format(backend, fmt: str | None, where: str) -> str:
    """The built format to load: the stage's ``format`` if set (checked to run on this backend), else the
    backend's ``default_zoo_format``, else the first zoo format whose files it loads (so a plugin that loads ONNX
    runs the ONNX exports)."""
    from speechperf.zoo.build import runnable_formats

    runs_on = runnable_formats(backend, variants=fmt is not None)  # a variant's format only when asked for
    if fmt is None:
        default = hooks(backend).default_zoo_format
        if default in runs_on:
            return default
        if not runs_on:
            raise StageError(
                f"{where}: backend {backend.name!r} loads none of the reference models' formats (it "
                f"loads {', '.join(backend.capabilities.formats) or 'nothing'}); give your own file "
                "as `path`"
            )
        return runs_on[0]
    if fmt not in runs_on:
        raise StageError(
            f"{where}: format {fmt!r} does not run on backend {backend.name!r}; allowed: {', '.join(runs_on)}"
        )
    return fmt


def zoo_format_of(backend, fmt: str | None, where: str):
    from speechperf.zoo.build import zoo_formats

    return zoo_formats(variants=True)[zoo_format(backend, fmt, where)][1]


def check_model_dir(model_dir: str, model: str | None, where: str):
    """``model_dir`` as the folder of a built ``model`` (None: any model, e.g. the silero VAD's files): a folder
    whose manifest is a JSON object naming that model. bench and ``config check`` both refuse a bad one here."""
    from pathlib import Path

    from speechperf.zoo.build import MANIFEST, read_manifest

    folder = Path(model_dir)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise StageError(f"{where}: model_dir {model_dir} {what}; give the folder of a built model")
    if model is None:
        return folder
    try:
        manifest = read_manifest(folder)
    except (OSError, ValueError) as exc:  # a folder named manifest.json, or not JSON
        raise StageError(f"{where}: model_dir {model_dir}: cannot read {MANIFEST}: {exc}") from None
    if not isinstance(manifest, dict):
        raise StageError(
            f"{where}: model_dir {model_dir}: {MANIFEST} holds a {type(manifest).__name__}; a JSON object is required"
        )
    found = manifest.get("model")
    if found != model:
        raise StageError(f"{where}: model_dir {model_dir} holds model {found!r}, not {model!r}")
    return folder


def load_sessions(
    model: str,
    preset: str,
    backend,
    device: str,
    threads: int,
    fmt: str | None = None,
    where: str = "",
    options=None,
    model_dir: str | None = None,
) -> dict[str, Session]:
    """A session per component of a reference model, built on demand into the zoo cache (or read from
    ``model_dir``, a built model folder such as a quantized variant). ``options`` (the stage's, for this backend)
    go over those the folder's manifest gives its files."""

    import attrs

    from speechperf.zoo.build import ensure_built, model_spec
    from speechperf.zoo.catalog import get_model

    fmt = zoo_format(backend, fmt, where)
    if model_dir is not None:
        folder = check_model_dir(model_dir, model, where)
    else:
        folder = ensure_built(model, preset, formats=[fmt])  # only the builders of fmt need be installed
    sessions = {}
    for component in get_model(model).component_names:
        spec = model_spec(folder, component, fmt)
        spec = attrs.evolve(spec, options={**spec.options, **(options or {})})
        session = backend.load(spec, device=device, threads=threads)
        session.inputs = spec.inputs  # check feeds by the catalog's declaration on every format (as the zoo does)
        sessions[component] = session
    return sessions
