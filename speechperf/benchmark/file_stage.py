"""Stages over a user's own model file and over the real silero VAD."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import numpy as np

from speechperf.backend import Session, TensorInfo
from speechperf.benchmark.layout import arrange, check_layout
from speechperf.benchmark.stage import Stage, StageError, StageIO
from speechperf.data.audio import resample
from speechperf.data.sample import Sample

log = logging.getLogger(__name__)


class FileStage(Stage):
    """A user's model file run once per sample. Its declared inputs are fed from the sample's arrays, in each
    input's ``layout`` (default: a batch of 1, ``[1, frames, bins]`` features), or, with ``value``, a constant; its
    first declared output is the stage's result, of the stage's output kind (``output_kind``, else the role's):
    token ids for s2t / mt / s2u, a waveform for tts / unit_vocoder / s2s, at the stage's ``output_sample_rate``
    (default ``sample_rate``); a mask, spectrogram, features or probabilities stay arrays among the outputs (no
    audio). The kind is decided when the model is loaded (``output_kinds.decide``: never audio when the model declares
    frames of bins), and a mask over a linear spectrogram is resynthesized into the stage's waveform, untimed
    (``finish``). Features are made from the audio with the stage's ``features`` settings, before timing.

    ``channels`` is the feature size the inputs are checked with at load against the shapes the model declares
    (None where the dataset holds features of its own size)."""

    batch_refusal = (
        "a model file's declared inputs carry no lengths speechperf can set (its layout's B is 1), so padding "
        "could change its outputs"
    )

    def __init__(
        self,
        role: str,
        session: Session,
        config,
        sample_rate: int,
        feature_fn=None,
        where: str = "",
        channels: int | None = None,
    ):
        self.role = role
        self.label = _label(config.path)
        self.sessions = {"model": session}
        self.config = config
        self.sample_rate = sample_rate
        self.output_rate = config.output_sample_rate or sample_rate
        self.feature_fn = feature_fn  # audio -> (frames, bins) features, needed only for a `features` input
        self.frontend = text_frontend(config)  # text -> tokens (and style), for a TTS file that says text
        _check_names(config, session, where or self.label)
        self.constants = _constants(config.inputs, session, where or self.label)
        _check_layouts(config, session, channels, where or self.label)
        self.declared_output_kind, note = _output_kind(config, role, session, where or self.label)
        if note:
            log.warning("note: %s", note)
        #: a mask applied to the noisy STFT and inverted (untimed, in ``finish``): the stage's speech output
        self.resynthesis = bool(self.output_kind == "mask" and config.features.spectrum == "linear" and feature_fn)
        if self.output_kind == "mask" and not self.resynthesis:
            log.info(
                "note: %s: output_kind mask is kept as an array, not resynthesized: a mask is applied to the linear "
                "STFT its features input is made from (features.spectrum: linear, e.g. features: nsnet2)",
                where or self.label,
            )
        self.untimed_s = {"front-end": 0.0, "resynthesis": 0.0}  # seconds outside the timed forward

    def _sources(self) -> set[str]:
        return {i.source for i in self.config.inputs if i.source}

    def from_sample(self, sample: Sample) -> StageIO:
        inp: StageIO = {}
        if sample.audio is not None:
            inp["audio"], inp["sample_rate"] = sample.audio, sample.sample_rate
        if sample.features is not None:
            inp["features"] = sample.features
        elif sample.audio is not None and {"features", "feature_length"} & self._sources():
            if self.feature_fn is None:
                raise StageError(f"{self.label}: a `features` input needs the log-mel adapter, which is missing")
            start = time.perf_counter()
            inp["features"] = self.feature_fn(sample.audio, sample.sample_rate)
            self.untimed_s["front-end"] += time.perf_counter() - start
        if sample.tokens is not None:
            inp["tokens"] = sample.tokens
        elif self.frontend is not None and sample.text:
            inp.update(self.frontend(sample.text))
        return inp

    def from_previous(self, output: StageIO) -> StageIO:
        if self.frontend is not None:  # says the previous stage's text (transcript, translation)
            if "text" not in output:
                raise StageError(
                    f"{self.label}: text_frontend {self.config.text_frontend} says text; the previous stage gave "
                    f"{sorted(output)} and no text"
                )
            return self.frontend(str(output["text"]))
        if "waveform" in output:
            return {
                "audio": resample(output["waveform"], output["sample_rate"], self.sample_rate),
                "sample_rate": self.sample_rate,
            }
        for key in ("tokens", "units"):
            if key in output:
                return {"tokens": np.asarray(output[key], dtype=np.int64)}
        raise StageError(f"{self.label}: the previous stage gave {sorted(output)}; nothing this file takes")

    def _array(self, source: str, inp: StageIO) -> np.ndarray:
        base = source.removesuffix("_length")
        key = {
            "audio": "audio",
            "features": "features",
            "feature": "features",
            "tokens": "tokens",
            "token": "tokens",
            "style": "style",
        }[base]
        if key not in inp:
            raise StageError(
                f"{self.label}: input source {source!r} needs {key}, which this sample does not have "
                f"(it has {', '.join(k for k in inp if k != 'sample_rate') or 'nothing'})"
            )
        value = np.asarray(inp[key])
        if source.endswith("_length"):
            return np.array([value.shape[0]])
        return value

    def feeds(self, inp: StageIO) -> dict[str, np.ndarray]:
        """The model's inputs for one stage input: the constants, and each sourced array in its layout."""
        feeds = dict(self.constants)
        for i in self.config.inputs:
            if i.source:
                value = self._array(i.source, inp)
                if not i.source.endswith("_length") and i.source != "style":  # style comes in the model's shape
                    value = arrange(value, i.source, i.layout)
                feeds[i.name] = np.ascontiguousarray(value.astype(i.dtype))
        return feeds

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        feeds = self.feeds(inp)
        outputs = sessions["model"](feeds)
        name = self.config.outputs[0]
        first = np.asarray(outputs[name])
        result: StageIO = {"outputs": outputs}
        if self.output_kind == "waveform":  # kept once, as the waveform, not again among the outputs
            if sum(1 for n in first.shape if n != 1) > 1:  # never flattened into a "waveform"
                raise StageError(
                    f"{self.label}: output {name!r} came out {list(first.shape)}, not a waveform (one axis of "
                    "samples besides axes of size 1); declare what it is: output_kind mask, spectrogram or features"
                )
            result["outputs"] = {k: v for k, v in outputs.items() if k != name}
            result["waveform"], result["sample_rate"] = first.reshape(-1).astype(np.float32), self.output_rate
        elif self.output_kind == "tokens" and np.issubdtype(first.dtype, np.integer):
            result["units" if self.role == "s2u" else "tokens"] = first.reshape(-1).astype(np.int64)
        return result

    @property
    def puts_out_speech(self) -> bool:
        return self.output_kind == "waveform" or self.resynthesis

    def finish(self, inp: StageIO, out: StageIO) -> StageIO:
        """A mask's resynthesis, untimed: the noisy STFT (the one its features were made from) times the mask,
        inverted, as the stage's waveform at the features' rate (``speechperf.adapters.spectrogram``)."""
        if not self.resynthesis or "audio" not in inp:
            return out
        from speechperf.adapters import spectrogram

        start = time.perf_counter()
        settings = self.config.features
        audio = resample(inp["audio"], inp["sample_rate"], settings.sample_rate)
        mask = _frames_by_bins(np.asarray(out["outputs"][self.config.outputs[0]]), inp["features"].shape, self.label)
        waveform = spectrogram.apply_mask(audio, mask, **settings.stft_settings())
        self.untimed_s["resynthesis"] += time.perf_counter() - start
        return {**out, "waveform": waveform, "sample_rate": settings.sample_rate}


def _frames_by_bins(mask: np.ndarray, frames_bins: tuple[int, ...], label: str) -> np.ndarray:
    """The mask as (frames, bins), the shape of the features it was computed from: its axes of size 1 dropped,
    transposed where it came bins first (channels_first)."""
    squeezed = mask.reshape([n for n in mask.shape if n != 1])
    if squeezed.shape == tuple(frames_bins):
        return squeezed
    if squeezed.shape == tuple(frames_bins)[::-1]:
        return squeezed.T
    raise StageError(
        f"{label}: the mask came out {list(mask.shape)}; its features input was {list(frames_bins)} (frames, bins), "
        "and a mask has a gain per frame and bin"
    )


def _output_kind(config, role: str, session: Session, where: str) -> tuple[str, str | None]:
    from speechperf.benchmark import output_kinds

    declared = {t.name: t for t in session.outputs}
    name = config.outputs[0]
    output = declared.get(name) or TensorInfo(name)
    return output_kinds.decide(config, role, output, session.inputs, where)


def _label(path: str) -> str:
    """The file as the user named it; a file speechperf keeps in its cache (the assembled Kokoro) by its name."""
    from pathlib import Path

    from speechperf.cache import cache_dir

    return Path(path).name if Path(path).resolve().is_relative_to(cache_dir().resolve()) else path


def text_frontend(config):
    """The stage's text front-end (``text_frontend``), or None: text -> {tokens, style, phonemes}."""
    if config.text_frontend != "kokoro":
        return None
    from speechperf.adapters.kokoro import KokoroFrontend
    from speechperf.zoo import kokoro

    return KokoroFrontend(kokoro.vocabulary(), kokoro.voice_pack(config.speaker), config.voice)


def feature_maker(settings):
    """audio, rate -> (frames, bins) features made with a stage's ``features`` settings (a FeatureConfig): log-mel,
    or the linear spectrogram (``spectrum: linear``)."""
    from speechperf.adapters import features, spectrogram

    if settings.spectrum == "linear":
        import scipy.signal  # noqa: F401  (imported now, at load, not inside the first sample's front-end time)

        linear = settings.linear_settings()

        def make_linear(audio: np.ndarray, sample_rate: int) -> np.ndarray:
            return spectrogram.linear_spectrogram(resample(audio, sample_rate, settings.sample_rate), **linear)

        return make_linear
    kwargs = settings.settings()

    def make(audio: np.ndarray, sample_rate: int) -> np.ndarray:
        return features.log_mel(resample(audio, sample_rate, settings.sample_rate), **kwargs)

    return make


def _check_names(config, session: Session, where: str) -> None:
    """The declared input and output names against those the loaded model has (where its file names them: ONNX,
    a paddle program; a TorchScript file is fed by position), before any sample runs."""
    for what, declared, has in (
        ("inputs", [i.name for i in config.inputs], session.input_names),
        ("outputs", list(config.outputs), session.output_names),
    ):
        unknown = [name for name in declared if name not in has]
        if unknown:
            raise StageError(
                f"{where}.{what}: the model has no {what[:-1]} {unknown[0]!r}; its {what}: {', '.join(has) or 'none'}"
            )
    missing = [name for name in session.input_names if name not in [i.name for i in config.inputs]]
    if missing:
        raise StageError(
            f"{where}.inputs: the model's input {missing[0]!r} is not declared; declare each of its inputs: "
            f"{', '.join(session.input_names)}"
        )


def _check_layouts(config, session: Session, channels: int | None, where: str) -> None:
    """Each sourced input's layout against the shape the loaded model declares for it, before any sample runs."""
    declared = {t.name: t for t in session.inputs}
    for index, i in enumerate(config.inputs):
        if not i.source or i.source.endswith("_length") or i.source == "style" or i.name not in declared:
            continue
        check_layout(
            declared[i.name],
            i.source,
            i.layout,
            channels,
            f"{where}.inputs[{index}] {i.name!r} ({i.source})",
            "features.n_mels" if config.features.spectrum == "mel" else "features.n_fft (n_fft // 2 + 1 bins)",
            config.features.num_frames if i.source.startswith("feature") else None,
        )


def _constants(inputs, session: Session, where: str) -> dict[str, np.ndarray]:
    """The ``value`` inputs as arrays, checked now against the dtype and shape the loaded model declares, so a
    wrong constant fails before measuring, naming the key."""
    from speechperf.backend import check_feeds
    from speechperf.errors import FeedError

    declared = {t.name: t for t in session.inputs}
    constants = {}
    for index, i in enumerate(inputs):
        if i.value is None:
            continue
        constants[i.name] = np.asarray(i.value, dtype=i.dtype)
        if i.name in declared:
            try:
                check_feeds((declared[i.name],), {i.name: constants[i.name]})
            except FeedError as exc:
                raise StageError(f"{where}.inputs[{index}].value = {i.value!r}: {exc}") from None
    return constants


class VadStage(Stage):
    """The real silero VAD, streamed 512 samples at a time (``speechperf.adapters.vad``), then cut into segments."""

    role = "vad"
    batch_refusal = "the silero stream carries its LSTM state chunk by chunk within one sample; it is not batched"

    def __init__(self, session: Session, threshold: float = 0.5):
        from speechperf.adapters import vad

        self._vad = vad
        self.label = "silero_vad"
        self.sessions = {"vad": session}
        self.threshold = threshold

    def from_sample(self, sample: Sample) -> StageIO:
        if sample.audio is None:
            raise StageError(f"sample {sample.id!r} is {sample.kind}; the VAD takes audio (a raw or generated dataset)")
        audio = resample(sample.audio, sample.audio_rate, self._vad.SAMPLE_RATE)
        return {"audio": audio, "sample_rate": self._vad.SAMPLE_RATE}

    def run(self, sessions: Mapping[str, Session], inp: StageIO) -> StageIO:
        probabilities = self._vad.speech_probabilities(sessions["vad"], inp["audio"], inp["sample_rate"])
        return {"segments": self._vad.speech_segments(probabilities, self.threshold), "probabilities": probabilities}
