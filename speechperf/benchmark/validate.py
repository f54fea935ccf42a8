"""Every check of a benchmark config that can be made before anything is loaded or measured.

``speechperf bench``, ``speechperf profile --config`` and ``speechperf config check`` all call ``check_config``, so
``config check`` says ok to exactly the configs bench would start measuring (up to what only loading can tell: a
model file that the framework cannot parse, a dataset line whose audio is corrupt). No framework is imported.
"""

from __future__ import annotations

import logging
from pathlib import Path

from speechperf.backend import Backend, ModelSpec, hooks
from speechperf.benchmark.stage import StageError
from speechperf.config.schema import BenchConfig, StageConfig
from speechperf.errors import ModelFileError, SpeechperfError

SILERO = "silero_vad"
log = logging.getLogger(__name__)


def require_backend_name(cfg: BenchConfig) -> str:
    """The backend bench runs (--backend or general.backend); a config that names none is refused."""
    if not cfg.general.backend:
        from speechperf.registry import known_backends

        raise SpeechperfError(
            f"no backend given: pass --backend NAME (or general.backend); known backends: {', '.join(known_backends())}"
        )
    return cfg.general.backend


def check_config(cfg: BenchConfig, backend_name: str | None = None) -> None:
    """Raise a one-line SpeechperfError for the first thing in ``cfg`` bench would refuse; ``backend_name`` (or
    general.backend) adds the backend's own checks (known name, device, model formats it loads)."""
    from speechperf.benchmark.text_reference import contradiction
    from speechperf.config.paths import check_written_paths
    from speechperf.data import check_dataset_config
    from speechperf.registry import get_backend

    warning = contradiction(cfg)  # said below, once the config's files, backends and dataset pass
    check_written_paths(cfg)  # a relative path of the file that names nothing: said with the key and the folder
    backend_name = backend_name or cfg.general.backend
    backend = get_backend(backend_name) if backend_name else None  # registered, not imported
    pinned = [get_backend(name) for name in dict.fromkeys(s.backend for s in cfg.stages if s.backend)]
    for each in [backend, *pinned]:  # the run's backend and each one a stage is pinned to
        if each is not None:
            hooks(each).check_device(cfg.general.device)
    check_dataset_config(cfg.general)
    if warning:
        log.warning("warning: %s: %s", cfg.source, warning)
    for index, (stage, role) in enumerate(zip(cfg.stages, cfg.roles), 1):
        where = f"{cfg.source}: stage{index}"
        check_stage_model(stage, role, where)
        check_phonemizer(stage, where)
        stage_backend = get_backend(stage.backend) if stage.backend else backend  # a pinned stage runs there
        if stage.model == "hf":  # a Hugging Face folder: readable, and a route to the backend
            _check_hf(stage, stage_backend, where)
        elif stage.path:
            for file, fmt, loader in _files_to_check(stage, stage_backend, where):
                _check_model_file(file, fmt, where, loader)
        elif stage.model is not None:  # the config holds exactly one of model and path
            _check_reference(stage, role, stage_backend, where)  # a pinned stage: its own backend's formats
        refusal = batch_refusal(stage, role)
        _check_serving_keys(cfg, stage, index, refusal, where)
        if cfg.general.batch_size > 1 and refusal is not None:
            what = stage.model if stage.model else "your own file"
            raise StageError(
                f"{where}: general.batch_size = {cfg.general.batch_size}: stage{index} ({what}) cannot batch: "
                f"{refusal}; allowed for it: 1"
            )


#: the stage keys of loadgen's ``general.serving: stages`` and their defaults (today's chain)
SERVING_KEYS = {"instances": 1, "stage_threads": None, "max_batch": 1, "max_queue_delay_ms": 0.0}


def _check_serving_keys(cfg: BenchConfig, stage: StageConfig, index: int, refusal: str | None, where: str) -> None:
    """The serving keys only with ``general.serving: stages``, and dynamic batching only where the stage batches."""
    if cfg.general.serving != "stages":
        for name, default in SERVING_KEYS.items():
            if getattr(stage, name) != default:
                raise StageError(
                    f"{where}: stage{index}.{name} = {getattr(stage, name)}: only with general.serving: stages "
                    "(loadgen's queue and pool per stage); allowed with general.serving: chain: "
                    f"{default if default is not None else 'null'}"
                )
    if stage.max_batch > 1 and refusal is not None:
        what = stage.model if stage.model else "your own file"
        raise StageError(
            f"{where}: stage{index}.max_batch = {stage.max_batch}: stage{index} ({what}) cannot batch: {refusal}; "
            "allowed for it: 1"
        )


def _check_hf(stage: StageConfig, backend, where: str) -> None:
    from speechperf.benchmark import hf_stage

    try:
        hf_stage.check_processor(stage)
    except SpeechperfError as exc:
        raise ModelFileError(f"{where}: {exc}") from None
    refusal = None if backend is None else hf_stage.route_refusal(stage, backend, where)
    if refusal:
        raise StageError(refusal)


def batch_refusal(stage: StageConfig, role: str) -> str | None:
    """Why the stage that ``stage`` builds refuses batch_size > 1 (``Stage.batch_refusal``), known before anything
    is loaded; None where it batches."""
    from speechperf.benchmark.file_stage import FileStage, VadStage
    from speechperf.benchmark.marian_stage import MarianStage
    from speechperf.benchmark.piper_stage import PiperStage
    from speechperf.benchmark.reference import END_TO_END_TTS, Seq2SeqStage, TTSStage, UnitVocoderStage

    if stage.model == "hf":
        from speechperf.benchmark.hf_stage import HfCtcStage, HfWhisperStage, folder_of

        try:
            kind = folder_of(stage).kind
        except SpeechperfError:  # said by the folder's own check
            kind = "ctc"
        return (HfCtcStage if kind == "ctc" else HfWhisperStage).batch_refusal
    if stage.path:
        return FileStage.batch_refusal
    if stage.model == SILERO:
        return VadStage.batch_refusal
    if stage.model in END_TO_END_TTS:
        return PiperStage.batch_refusal
    if role == "mt" and stage.model != "mt":  # a real MT model (Marian: a decoder step with a recurrent state)
        return MarianStage.batch_refusal
    return {"tts": TTSStage, "unit_vocoder": UnitVocoderStage}.get(role, Seq2SeqStage).batch_refusal


def pinned_stages(cfg: BenchConfig, run_backend: str | None) -> dict[int, str]:
    """stage index (1-based) -> backend, for the stages pinned to another backend than the run's."""
    return {i: s.backend for i, s in enumerate(cfg.stages, 1) if s.backend and s.backend != run_backend}


def require_pinned_backends(cfg: BenchConfig, run_backend: str | None) -> dict[str, Backend]:
    """Each backend a stage is pinned to, checked to be installed (this imports its framework); one line naming the
    stage, the backend and how to install it when one is not. Called before anything is loaded or measured."""
    from speechperf.registry import require_backend

    found: dict[str, Backend] = {}
    for index, name in pinned_stages(cfg, run_backend).items():
        if name in found:
            continue
        try:
            found[name] = require_backend(name)
        except SpeechperfError as exc:
            raise type(exc)(f"{cfg.source}: stage{index}.backend: {exc}") from None
    return found


def check_stage_model(stage: StageConfig, role: str, where: str) -> None:
    """The stage's model fits its role: the real silero VAD only as a VAD, no reference model where none exists."""
    if stage.path:
        return
    if stage.model == SILERO and role != "vad":
        raise StageError(f"{where}: model {SILERO!r} is a VAD; this stage is the {role} model")
    if role == "s2s":
        raise StageError(
            f"{where}: there is no reference direct speech-to-speech model; give your own file as "
            "`path` (or use model_type S2UT: s2ut + unit_vocoder)"
        )
    if role == "vad" and stage.model != SILERO:
        raise StageError(
            f"{where}: the VAD stage takes model {SILERO!r} or your own file (path); got model {stage.model!r}"
        )


def check_phonemizer(stage: StageConfig, where: str) -> None:
    """A stage that phonemizes text (Piper, the kokoro front-end) finds the espeak-ng library and its voice now,
    not at its first sample after the other stages were timed."""
    from speechperf.adapters.espeak import check_voice
    from speechperf.benchmark.reference import END_TO_END_TTS

    if stage.text_frontend == "kokoro":
        voice = stage.voice
    elif not stage.path and stage.model in END_TO_END_TTS:
        from speechperf.zoo.piper import voice_config

        try:
            voice = voice_config().espeak_voice
        except SpeechperfError:  # the voice's package is missing: loading it says so, with the install command
            return
    else:
        return
    try:
        check_voice(voice)
    except SpeechperfError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _check_reference(stage: StageConfig, role: str, backend, where: str) -> None:
    """A reference model's name, preset, vocoder, ``format`` (on ``backend``, or on some backend) and ``model_dir``,
    by the checks bench's loader makes (benchmark/reference)."""
    from speechperf.benchmark.reference import check_model_dir, zoo_format
    from speechperf.zoo.build import zoo_formats
    from speechperf.zoo.catalog import check_preset, get_model

    if stage.model != SILERO:
        try:
            get_model(str(stage.model))  # an unknown name fails with the known names
            check_preset(stage.preset)
            _check_pretrained_keys(stage, str(stage.model), role)
        except SpeechperfError as exc:
            raise type(exc)(f"{where}: {exc}") from None
        if backend is not None and stage.format is not None:  # the default format is the loader's to pick
            zoo_format(backend, stage.format, where)
        elif stage.format is not None and stage.format not in zoo_formats(variants=True):
            raise StageError(
                f"{where}: format {stage.format!r} is not a built format of the reference models; allowed: "
                f"{', '.join(zoo_formats(variants=True))}"
            )
    if stage.model_dir is not None:
        check_model_dir(stage.model_dir, None if stage.model == SILERO else stage.model, where)


def _check_pretrained_keys(stage: StageConfig, model: str, role: str) -> None:
    """A TTS stage's vocoder (a mel vocoder of the stage's preset) and a Whisper stage's language and task (against
    the installed model's tokenizer)."""
    from speechperf.zoo.catalog import get_model, known_models

    if role == "tts" and stage.vocoder:

        def takes_mel(name: str) -> bool:
            return any(t.name == "mel" for c in get_model(name).components for t in c.inputs)

        if not takes_mel(stage.vocoder):
            vocoders = [name for name in known_models() if takes_mel(name)]
            raise StageError(f"vocoder {stage.vocoder!r} is not a mel vocoder; allowed: {', '.join(vocoders)}")
        get_model(stage.vocoder).hparams(stage.preset)  # one size only for a pretrained vocoder
    if model.startswith("whisper-"):
        from speechperf.adapters.whisper import WhisperVocabulary
        from speechperf.errors import FeedError
        from speechperf.zoo.whisper import model_dir

        try:
            WhisperVocabulary.from_dir(model_dir(model)).check_prompt(stage.src_lang, stage.task, model)
        except FeedError as exc:
            raise StageError(str(exc)) from None


def _files_to_check(stage: StageConfig, backend, where: str) -> list[tuple[str, str | None, object]]:
    """(file, format, backend that loads it) for each file of a ``path`` stage that a run could load: with a
    backend, the one it runs (a derived file's source, checked on the backend that exports it); without, every
    file of the stage, each on its own backend."""
    from speechperf.benchmark.backend_files import (
        derive_source,
        derives_for,
        files_by_backend,
        require_derive_source,
        stage_file,
    )
    from speechperf.registry import get_backend

    single = isinstance(stage.path, str)
    if stage.derive and derive_source(stage) is None:
        from speechperf.benchmark.backend_files import source_suffixes

        raise ModelFileError(
            f"{where}: derive: {stage.derive} exports from a file that a backend's ONNX exporter reads (suffixes "
            f"{', '.join(f'{k} = {v}' for k, v in source_suffixes().items())}); path is {stage.path}"
        )
    if backend is not None:
        if derives_for(stage, backend.name):
            source_backend, file = require_derive_source(stage)
            return [(file, stage.format if single else None, get_backend(source_backend))]
        return [(stage_file(stage, backend.name, where), stage.format if single else None, backend)]
    return [
        (file, stage.format if single else None, get_backend(name) if name else None)
        for name, file in files_by_backend(stage).items()
    ]


def _check_model_file(file: str, fmt: str | None, where: str, backend) -> None:
    path = Path(file)
    if not path.exists():
        raise ModelFileError(f"{where}: model file not found: {path}")
    if path.is_dir():
        raise ModelFileError(f"{where}: model file {path} is a folder; `path` names one model file")
    if backend is not None:
        suffixes = dict(hooks(backend).suffix_formats)
        own = fmt or suffixes.get(path.suffix)
        if own not in backend.capabilities.formats and (elsewhere := _loaded_elsewhere(path, fmt)):
            other_fmt, others = elsewhere
            raise ModelFileError(
                f"{where}: backend {backend.name!r} does not load {path.name} ({other_fmt}: loaded by "
                f"{', '.join(others)}); speechperf does not convert {other_fmt} files to {backend.name}'s formats. "
                f"Run this stage on {others[0]} (--backend {others[0]}, or the stage's `backend: {others[0]}`), or "
                f"give {backend.name}'s own file ({', '.join(backend.capabilities.formats)}), e.g. one file per "
                f"backend: `path: {{{backend.name}: model{_suffix_of(suffixes)}, {others[0]}: {path.name}}}`"
            )
        if fmt is None and path.suffix not in suffixes:
            raise ModelFileError(
                f"{where}: cannot tell the format of {path} from its suffix {path.suffix!r}; backend "
                f"{backend.name!r} loads: {', '.join(backend.capabilities.formats)} (suffixes "
                f"{', '.join(f'{k} = {v}' for k, v in suffixes.items())}): set the stage's `format:` if the file "
                "is one of them"
            )
        hooks(backend).check_format(ModelSpec(path), fmt or suffixes.get(path.suffix))
        return
    known_suffixes, formats = _known_formats()
    if fmt is None and path.suffix not in known_suffixes:
        raise ModelFileError(
            f"{where}: cannot tell the format of {path} from its suffix {path.suffix!r}; known "
            f"suffixes: {', '.join(sorted(known_suffixes))} (or set the stage's `format:`)"
        )
    if fmt is not None and fmt not in formats:
        raise ModelFileError(
            f"{where}: format {fmt!r} is not loaded by any backend; known formats: {', '.join(sorted(formats))}"
        )


def _loaded_elsewhere(path: Path, fmt: str | None) -> tuple[str, list[str]] | None:
    """(format, the backends that load it) for a file another backend loads (by its ``fmt``, else its suffix) and
    this one does not, or None."""
    from speechperf.registry import get_backend, known_backends

    found: list[str] = []
    format_ = fmt
    for name in known_backends():
        try:
            other = get_backend(name)
        except SpeechperfError:
            continue
        own = fmt or dict(hooks(other).suffix_formats).get(path.suffix)
        if own is not None and own in other.capabilities.formats:
            found.append(name)
            format_ = own
    return (format_, found) if format_ and found else None


def _suffix_of(suffixes: dict[str, str]) -> str:
    return next(iter(suffixes), "")


def _known_formats() -> tuple[set[str], set[str]]:
    """The file suffixes and formats some registered backend loads (a broken plugin adds none)."""
    from speechperf.registry import get_backend, known_backends

    suffixes, formats = set(), set()
    for name in known_backends():
        try:
            backend = get_backend(name)
        except SpeechperfError:
            continue
        suffixes |= set(hooks(backend).suffix_formats)
        formats |= set(backend.capabilities.formats)
    return suffixes, formats
