"""Read a benchmark config from YAML, check every key, and merge as fairseq does: defaults < general < stageN.

YAML is read by ``speechperf.config.yaml_reader``: a safe loader that also refuses duplicate keys, keys that are not
names, aliases that expand past a bound, and ignores top-level ``x-`` keys (anchors for merge keys). Every error is
one line naming the file, the line, the key, the value (cut to a few hundred characters, ``errors.shorten``) and
what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import yaml

from speechperf.backend.options import OptionError, check_options
from speechperf.config import paths
from speechperf.config.schema import (
    FEATURE_PRESETS,
    GENERAL_KEYS,
    LAYOUT_NAMES,
    MAX_STAGES,
    MODEL_TYPES,
    RUN_AND_STAGE_KEYS,
    STAGE_KEYS,
    BenchConfig,
    FeatureConfig,
    GeneralConfig,
    InputConfig,
    StageConfig,
)
from speechperf.config.yaml_reader import read_config_yaml, read_yaml
from speechperf.errors import SpeechperfError, shorten, shorten_path
from speechperf.outputs import file_problem
from speechperf.registry import get_backend
from speechperf.values import KIND_TEXT, ConfigError, bad_value, check_value, suggest


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Line number of each key of the top two levels, for error messages."""
    lines: dict[tuple[str, ...], int] = {}
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        return lines
    for k, v in root.value:
        lines[(str(k.value),)] = k.start_mark.line + 1
        if isinstance(v, yaml.MappingNode):
            for k2, _ in v.value:
                lines[(str(k.value), str(k2.value))] = k2.start_mark.line + 1
    return lines


#: The largest config file read: the largest real one is a few KB; a bigger one is not a config (and reading it
#: into YAML would take minutes).
CONFIG_MAX_BYTES = 10_000_000


def load_config(
    path: str | Path,
    overrides: Mapping[str, Any] | None = None,
    stage_overrides: Mapping[str, Any] | None = None,
    sets: Sequence[str] = (),
) -> BenchConfig:
    """Read, check and merge the config file at ``path``; ``overrides`` replace general keys (the CLI's options),
    ``stage_overrides`` replace a key in every stage (e.g. ``--preset tiny``)."""
    path = Path(path)
    problem = file_problem(path)  # before the read: /dev/zero never ends, a FIFO blocks it forever
    if problem == "not found":
        shipped = "; nor is it a shipped config (`speechperf config list`)" if path.name == str(path) else ""
        raise ConfigError(f"config file not found: {shorten_path(path)}{shipped}")
    if problem is not None:
        raise ConfigError(f"config file {shorten_path(path)} {problem}; give a YAML file")
    if (size := path.stat().st_size) > CONFIG_MAX_BYTES:
        raise ConfigError(
            f"config file {shorten_path(path)} is {size:,} bytes; at most {CONFIG_MAX_BYTES:,} (a config is a few KB)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    return parse_config(text, str(path), overrides, stage_overrides, sets, base=path.parent)


def default_config(
    overrides: Mapping[str, Any] | None = None,
    stage_overrides: Mapping[str, Any] | None = None,
    sets: Sequence[str] = (),
) -> BenchConfig:
    """The built-in default (tiny S2T on a generated dataset), shipped inside the package."""
    text = resources.files("speechperf.config").joinpath("default.yaml").read_text(encoding="utf-8")
    return parse_config(text, "<built-in default.yaml>", overrides, stage_overrides, sets)


def apply_sets(data: dict[str, Any], sets: Sequence[str]) -> set[tuple[str, str]]:
    """Apply ``--set section.key=value`` items (the value is read as YAML: ``5``, ``true``, ``[0.5, 1]``); returns
    the (section, key) pairs set."""
    done = set()
    for item in sets:
        target, sep, raw = item.partition("=")
        section, dot, key = target.strip().partition(".")
        if not sep or not dot or not section or not key:
            raise ConfigError(f"--set {shorten(item)}: expected SECTION.KEY=VALUE, e.g. stage1.max_len_b=10")
        value = read_yaml(raw, f"--set {shorten_path(target.strip())}") if raw.strip() else None
        existing = data.get(section)
        if existing is not None and not isinstance(existing, dict):
            raise ConfigError(f"--set {shorten(item)}: section {shorten(section)} is not a mapping")
        data.setdefault(section, {})
        if data[section] is None:
            data[section] = {}
        data[section][key] = value
        done.add((section, key))
    return done


def parse_config(
    text: str,
    source: str,
    overrides: Mapping[str, Any] | None = None,
    stage_overrides: Mapping[str, Any] | None = None,
    sets: Sequence[str] = (),
    base: Path | None = None,
) -> BenchConfig:
    """The config in ``text`` (``source`` names it in errors), its relative paths read from the folder ``base`` and
    made absolute (None: left as written, read from the working folder), then ``sets``, ``overrides`` and
    ``stage_overrides`` over it (the command line's: their paths are the working folder's)."""
    data = read_config_yaml(text, source)
    lines = _key_lines(text)

    def where(*keys: str) -> str:
        line = lines.get(tuple(keys))
        return f"{source}:{line}" if line else source

    written = paths.resolve(data, base, where) if base is not None else []
    file_general = dict(data.get("general") or {}) if isinstance(data.get("general"), dict) else {}
    from_sets = apply_sets(data, sets)

    sections = ["general"] + [f"stage{i}" for i in range(1, MAX_STAGES + 1)]
    for name in data:
        if name not in sections:
            raise ConfigError(
                f"{where(str(name))}: unknown section {shorten(name)}{suggest(str(name), sections)}; "
                f"allowed: {', '.join(sections)}"
            )
        if data[name] is not None and not isinstance(data[name], dict):
            raise ConfigError(
                f"{where(name)}: section {shorten(name)} is a {type(data[name]).__name__}; a mapping is required"
            )

    general_raw = dict(data.get("general") or {})
    for k in general_raw:
        if k not in GENERAL_KEYS and k not in STAGE_KEYS:
            raise ConfigError(
                f"{where('general', k)}: unknown key general.{k}{suggest(k, GENERAL_KEYS + STAGE_KEYS)}; "
                "see `speechperf config keys`"
            )
    general_raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    given = {k for k, v in (overrides or {}).items() if v is not None} | {k for s, k in from_sets if s == "general"}
    if "dataset_path" in given and "dataset_size" not in given and "dataset_size" in file_general:
        # The file's dataset_size is for the file's dataset: the user's own keeps all its samples (--dataset-size cuts)
        general_raw.pop("dataset_size")
    general_values = {k: v for k, v in general_raw.items() if k in GENERAL_KEYS}
    stage_defaults = {k: v for k, v in general_raw.items() if k in STAGE_KEYS and k not in RUN_AND_STAGE_KEYS}
    general = _build(GeneralConfig, general_values, lambda k: where("general", k), "general")

    roles, required = MODEL_TYPES[general.model_type]
    present = [i for i in range(1, MAX_STAGES + 1) if f"stage{i}" in data]
    for i in present:
        if i > len(roles):
            raise ConfigError(
                f"{where(f'stage{i}')}: model_type {general.model_type} has {len(roles)} stage(s) "
                f"({', '.join(roles)}); stage{i} is not used"
            )
    stages = []
    for i, role in enumerate(roles, 1):
        section = f"stage{i}"
        if section not in data:
            if i <= required:
                raise ConfigError(
                    f"{source}: model_type {general.model_type} needs stage{i} (the {role} model); "
                    f"it has {', '.join(f'stage{j}' for j in present) or 'no stages'}"
                )
            break
        raw = dict(data[section] or {})
        for k in raw:
            if k in GENERAL_KEYS and k not in RUN_AND_STAGE_KEYS:
                raise ConfigError(f"{where(section, k)}: {section}.{k} is a run-level key; put it in general")
            if k not in STAGE_KEYS:
                raise ConfigError(
                    f"{where(section, k)}: unknown key {section}.{k}{suggest(k, STAGE_KEYS)}; "
                    "see `speechperf config keys`"
                )
        merged = {**stage_defaults, **raw}
        merged.update({k: v for k, v in (stage_overrides or {}).items() if v is not None})
        stage = _build(
            StageConfig, merged, lambda k, s=section: where(s, k) if (s, k) in lines else where("general", k), section
        )
        stage = _packaged_file(stage, section, where(section, "text_frontend"))
        _check_stage(stage, section, role, where(section))
        if stage.backend is not None:  # a registry look-up: no framework is imported
            try:
                get_backend(stage.backend)
            except SpeechperfError as exc:
                raise ConfigError(f"{where(section, 'backend')}: {section}.backend: {exc}") from None
        if stage.options:
            stage = attrs.evolve(stage, options=check_stage_options(stage.options, where(section, "options"), section))
        stages.append(stage)
    if general.clean_reference_dir and not _speech_out(general.model_type, stages[-1]):
        raise ConfigError(
            f"{where('general', 'clean_reference_dir')}: general.clean_reference_dir (clean speech for PESQ / STOI) "
            f"applies to an S2S model whose output is a waveform, or a mask over the linear STFT (features.spectrum: "
            f"linear) resynthesized into one (speech enhancement); this config's model_type is {general.model_type}"
            + (f", its output_kind {stages[-1].output_kind}" if general.model_type == "S2S" else "")
        )
    return BenchConfig(general=general, stages=tuple(stages), source=source, written_paths=tuple(written))


def _speech_out(model_type: str, stage: StageConfig) -> bool:
    """Whether an S2S stage puts out speech: a waveform, or a mask it resynthesizes (over a linear spectrogram)."""
    kind = stage.output_kind_as("s2s")
    return model_type == "S2S" and (kind == "waveform" or (kind == "mask" and stage.features.spectrum == "linear"))


def check_stage_options(options: Mapping[str, Any], at: str, section: str) -> dict[str, dict[str, Any]]:
    """A stage's ``options`` (backend name -> settings), each backend's settings checked by that backend.

    Backends are looked up in the registry, which imports no framework."""
    if not isinstance(options, Mapping):
        raise OptionError(
            f"{at}: {section}.options = {shorten(options)}; expected a mapping of backend name -> options, "
            "e.g. {onnxruntime: {graph_optimization_level: basic}}"
        )
    checked = {}
    for name, settings in options.items():
        try:
            backend = get_backend(str(name))
        except SpeechperfError as exc:  # an unknown or broken backend: one line naming the known ones
            raise OptionError(f"{at}: {section}.options: {exc}") from None
        checked[str(name)] = check_options(backend, settings or {}, f"{at}: {section}.options.{name}")
    return checked


def _packaged_file(stage: StageConfig, section: str, at: str) -> StageConfig:
    """A Kokoro stage without ``path`` runs the Kokoro-82M file of the ``kokoro`` extra (assembled on first use)."""
    if stage.text_frontend != "kokoro" or stage.path or stage.model:
        return stage
    from speechperf.zoo import kokoro

    try:
        return attrs.evolve(stage, path=str(kokoro.model_file()))
    except SpeechperfError as exc:
        raise ConfigError(f"{at}: {section}.text_frontend: kokoro: {exc}") from None


def _check_stage(stage: StageConfig, section: str, role: str, at: str) -> None:
    if stage.text_frontend and not (role == "tts" and not stage.model):
        raise ConfigError(
            f"{at}: {section}.text_frontend = {stage.text_frontend!r} applies to your own model file (path) of a tts "
            f"stage; this is the {role} stage{'' if not stage.model else f' of reference model {stage.model!r}'}"
        )
    if stage.model == HF_MODEL:  # a Hugging Face folder: model says how path is read
        _check_hf_stage(stage, section, role, at)
        return
    if stage.model and stage.path:
        raise ConfigError(
            f"{at}: {section} sets both model ({shorten(stage.model)}) and path ({shorten(stage.path)}); set one "
            f"(or `model: {HF_MODEL}` with path a Hugging Face save_pretrained folder)"
        )
    if not stage.model and not stage.path:
        raise ConfigError(
            f"{at}: {section} (the {role} model) needs `model` (a reference model) or `path` (your own model file)"
        )
    if stage.path and not stage.inputs:
        raise ConfigError(
            f"{at}: {section}.path {shorten(stage.path)} needs `inputs` declared: a list of {{name, source, dtype}}"
        )
    _check_output_kind(stage, section, role, at)
    if stage.output_sample_rate is not None and not (stage.path and role in ("tts", "unit_vocoder", "s2s")):
        raise ConfigError(
            f"{at}: {section}.output_sample_rate applies to your own model file (path) of a tts, "
            f"unit_vocoder or s2s stage; this is the {role} stage"
            f"{'' if stage.path else ' of a reference model, whose rate is known'}"
        )
    if not stage.path and stage.features != FeatureConfig():
        raise ConfigError(
            f"{at}: {section}.features applies to your own model file (path); a reference model makes its own"
        )
    if stage.derive and not stage.path:
        raise ConfigError(f"{at}: {section}.derive = {shorten(stage.derive)} applies to your own model file (path)")
    if stage.derive and section != "stage1":
        raise ConfigError(
            f"{at}: {section}.derive: a derived file is checked on the stage's inputs from the dataset, which only "
            "stage1 takes; derive the file of a later stage as stage1 of its own config"
        )
    if stage.path and not stage.outputs:
        raise ConfigError(
            f"{at}: {section}.path {shorten(stage.path)} needs `outputs` declared: a list of output names"
        )


#: ``model: hf``: the stage's ``path`` is a Hugging Face ``save_pretrained`` folder (speechperf.benchmark.hf_stage).
HF_MODEL = "hf"
#: The keys of a ``model: hf`` stage that belong to a user's file (its graphs, inputs and features come from the
#: folder) or to a reference model.
HF_REFUSED = ("inputs", "outputs", "derive", "format", "entry", "output_kind", "output_sample_rate", "text_frontend")


def _check_hf_stage(stage: StageConfig, section: str, role: str, at: str) -> None:
    if role != "s2t":
        raise ConfigError(
            f"{at}: {section}: model: {HF_MODEL} runs speech recognition (CTC or Whisper), an s2t stage; this is the "
            f"{role} stage"
        )
    if not isinstance(stage.path, str):
        raise ConfigError(
            f"{at}: {section}: model: {HF_MODEL} needs `path`: one save_pretrained folder (config.json, weights, "
            f"processor files); got {shorten(stage.path)}"
        )
    default = StageConfig()
    for name in HF_REFUSED:
        if getattr(stage, name) != getattr(default, name):
            raise ConfigError(
                f"{at}: {section}.{name} does not apply to model: {HF_MODEL}: the folder's config.json and processor "
                "say its graphs, inputs and outputs"
            )
    if stage.features != FeatureConfig():
        raise ConfigError(f"{at}: {section}.features does not apply to model: {HF_MODEL}: its processor makes them")


#: The output kinds a user's file may declare per role: speech roles put out audio or frames of it, the others
#: ids, scores or features (their output is handed on as tokens or segments, never as audio).
SPEECH_ROLE_KINDS = ("waveform", "mask", "spectrogram", "features")
OTHER_ROLE_KINDS = ("tokens", "probabilities", "features")


def _check_output_kind(stage: StageConfig, section: str, role: str, at: str) -> None:
    kind = stage.output_kind
    if kind is None:
        return
    if not stage.path:
        raise ConfigError(
            f"{at}: {section}.output_kind = {kind!r} applies to your own model file (path); a reference model's "
            "output is known"
        )
    allowed = SPEECH_ROLE_KINDS if role in ("tts", "unit_vocoder", "s2s") else OTHER_ROLE_KINDS
    if kind not in allowed:
        raise ConfigError(
            f"{at}: {section}.output_kind = {kind!r} is not an output of a {role} stage; allowed: {', '.join(allowed)}"
        )
    if stage.output_sample_rate is not None and kind != "waveform":
        raise ConfigError(
            f"{at}: {section}.output_sample_rate applies to a waveform output; this stage's output_kind is {kind!r}"
        )


def _build(cls, values: dict[str, Any], where, section: str):
    kwargs = {}
    for field in attrs.fields(cls):
        if field.name not in values:
            continue
        kwargs[field.name] = _check(field, values[field.name], f"{section}.{field.name}", where(field.name))
    return cls(**kwargs)


def _check(field: attrs.Attribute, value: Any, name: str, at: str) -> Any:
    """``check_value``, plus the kinds that need this module's classes: a model file's declared inputs, a
    stage's feature settings, its file (or a file per registered backend) and its float tolerances."""
    kind = field.metadata["kind"]
    if kind in ("path?", "tolerance?"):
        if value is None:
            return None
        return _path(value, name, at) if kind == "path?" else _tolerance(value, name, at)
    if kind == "inputs":
        if not isinstance(value, list):
            raise bad_value(value, name, at, KIND_TEXT[kind])
        return tuple(_input(v, f"{name}[{i}]", at) for i, v in enumerate(value))
    if kind == "features":
        if isinstance(value, FeatureConfig):  # a default already built
            return value
        if not isinstance(value, (str, dict)):
            raise bad_value(value, name, at, KIND_TEXT[kind])
        return _features({"preset": value} if isinstance(value, str) else value, name, at)
    return check_value(field, value, name, at)


def _path(value: Any, name: str, at: str) -> str | dict[str, str]:
    """A model file, or a file per backend (``{torch: a.pt, onnxruntime: a.onnx}``), each backend a registered one."""
    if isinstance(value, str):
        return value
    expected = "a file path or a mapping of backend name -> file path"
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{at}: {name} = {shorten(value)} ({type(value).__name__}); expected {expected}")
    from speechperf.registry import known_backends

    known = known_backends()
    for backend, file in value.items():
        if backend not in known:
            raise ConfigError(
                f"{at}: {name}.{backend}: unknown backend{suggest(str(backend), known)}; known backends: "
                f"{', '.join(known)}"
            )
        if not isinstance(file, str):
            raise ConfigError(f"{at}: {name}.{backend} = {shorten(file)}; expected a file path")
    return dict(value)


def _tolerance(value: Any, name: str, at: str) -> dict[str, dict[str, float]]:
    """Per output name, the float-fidelity limits it replaces (speechperf.meters.fidelity.Tolerance)."""
    from speechperf.meters.fidelity import Tolerance

    allowed = list(Tolerance.fields_help())
    if not isinstance(value, dict):
        raise ConfigError(
            f"{at}: {name} = {shorten(value)}; expected a mapping of output name -> {{{', '.join(allowed)}}}"
        )
    out = {}
    for output, limits in value.items():
        if not isinstance(limits, dict):
            raise ConfigError(
                f"{at}: {name}.{output} = {shorten(limits)}; expected a mapping with keys {', '.join(allowed)}"
            )
        for k, v in limits.items():
            if k not in allowed:
                raise ConfigError(
                    f"{at}: unknown key {name}.{output}.{k}{suggest(str(k), allowed)}; allowed: {', '.join(allowed)}"
                )
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ConfigError(f"{at}: {name}.{output}.{k} = {shorten(v)}; expected a finite number")
        out[str(output)] = {k: float(v) for k, v in limits.items()}
    return out


def _input(value: Any, name: str, at: str) -> InputConfig:
    if not isinstance(value, dict):
        raise ConfigError(f"{at}: {name} = {shorten(value)}; expected a mapping {{name, source, dtype}}")
    allowed = [f.name for f in attrs.fields(InputConfig)]
    for k in value:
        if k not in allowed:
            raise ConfigError(f"{at}: unknown key {name}.{k}{suggest(str(k), allowed)}; allowed: {', '.join(allowed)}")
    if "name" not in value:
        raise ConfigError(f"{at}: {name} has no 'name'; each input needs name and source (or value)")
    if (value.get("source") is None) == (value.get("value") is None):
        raise ConfigError(
            f"{at}: {name} ({shorten(value['name'])}) needs exactly one of source (an array of the sample) "
            "and value (a constant)"
        )
    kwargs = {
        f.name: _check(f, value[f.name], f"{name}.{f.name}", at) for f in attrs.fields(InputConfig) if f.name in value
    }
    if "value" in kwargs:
        kwargs["value"] = _constant(kwargs["value"], kwargs.get("dtype", "float32"), f"{name}.value", at)
    if kwargs.get("layout") is not None:
        kwargs["layout"] = _layout(kwargs["layout"], kwargs.get("source"), f"{name}.layout", at)
    return InputConfig(**kwargs)


def _layout(value: str, source: str | None, name: str, at: str) -> str:
    """A layout as axis letters (``channels_first`` -> ``BCT``), refused unless it orders the source's own axes."""
    letters = LAYOUT_NAMES.get(value, value)
    allowed = f"letters B, T, C each at most once (e.g. BCT), or {', '.join(LAYOUT_NAMES)}"
    if source is None or source.endswith("_length"):
        raise ConfigError(
            f"{at}: {name} = {shorten(value)}: a layout orders an audio, features or tokens input; "
            f"this input is {'a constant' if source is None else source}"
        )
    if not letters or set(letters) - set("BTC") or len(set(letters)) != len(letters):
        raise ConfigError(f"{at}: {name} = {shorten(value)}; allowed: {allowed}")
    own = "TC" if source == "features" else "T"
    missing = [axis for axis in own if axis not in letters]
    if missing:
        raise ConfigError(
            f"{at}: {name} = {shorten(value)} leaves out axis {missing[0]} of {source} ({own}); allowed: {allowed} "
            f"holding {' and '.join(own)}"
        )
    return letters


def _features(value: dict[str, Any], name: str, at: str) -> FeatureConfig:
    """A stage's feature settings: the preset's values, replaced by the keys given beside it, each checked."""
    fields = {f.name: f for f in attrs.fields(FeatureConfig)}
    for k in value:
        if k not in fields:
            raise ConfigError(
                f"{at}: unknown key {name}.{k}{suggest(str(k), list(fields))}; allowed: {', '.join(fields)}"
            )
    preset = check_value(fields["preset"], value.get("preset", "kaldi-fbank"), f"{name}.preset", at)
    merged = {**FEATURE_PRESETS[preset][1], **value, "preset": preset}
    checked = {k: check_value(fields[k], v, f"{name}.{k}", at) for k, v in merged.items()}
    cfg = FeatureConfig(**checked)
    nyquist = cfg.sample_rate / 2
    if cfg.win_length > cfg.n_fft:
        raise ConfigError(
            f"{at}: {name}.win_length = {cfg.win_length} is longer than n_fft = {cfg.n_fft}; it must be <= n_fft"
        )
    if cfg.fmax is not None and cfg.fmax > nyquist:
        raise ConfigError(f"{at}: {name}.fmax = {cfg.fmax:g} is above half the sample rate ({nyquist:g} Hz)")
    if cfg.fmin >= (cfg.fmax if cfg.fmax is not None else nyquist):
        raise ConfigError(f"{at}: {name}.fmin = {cfg.fmin:g} must be below fmax ({cfg.fmax or nyquist:g} Hz)")
    if cfg.spectrum == "linear" and (cfg.padding != "none" or cfg.normalize == "whisper"):
        bad, given = ("padding", cfg.padding) if cfg.padding != "none" else ("normalize", cfg.normalize)
        raise ConfigError(
            f"{at}: {name}.{bad} = {shorten(given)} does not apply to spectrum 'linear' (scipy's ShortTimeFFT "
            "framing, zero-padded ends; normalize none or utterance)"
        )
    if cfg.frontend == "kaldi" and cfg.spectrum == "mel" and (cfg.padding != "none" or cfg.mel_scale != "htk"):
        bad, given = ("padding", cfg.padding) if cfg.padding != "none" else ("mel_scale", cfg.mel_scale)
        raise ConfigError(
            f"{at}: {name}.{bad} = {shorten(given)} does not apply to frontend 'kaldi' (Kaldi frames with snip edges on the "
            "HTK mel scale); set frontend: stft for librosa / torch.stft features"
        )
    return cfg


def _constant(value: Any, dtype: str, name: str, at: str) -> Any:
    """A constant input as a plain nested list; refused if not numbers, or not exact in an integer ``dtype``."""
    import numpy as np

    try:
        given = np.asarray(value)
    except ValueError:  # a ragged nested list
        given = np.asarray(None, dtype=object)
    if given.dtype.kind not in "biuf" or given.size == 0:
        raise ConfigError(f"{at}: {name} = {shorten(value)}; expected a number or a rectangular nested list of numbers")
    cast = given.astype(dtype)
    if np.dtype(dtype).kind in "biu" and not np.array_equal(cast, given):
        raise ConfigError(f"{at}: {name} = {shorten(value)} does not fit dtype {dtype} exactly")
    return given.tolist()  # as written (0.667, not float32's 0.6669999957); cast to dtype when fed


def write_config(data: Mapping[str, Any], path: Path) -> Path:
    """``data`` (a config as ``BenchConfig.to_dict`` gives it) as the YAML file ``path`` that a child process reads
    (compare's dict cells, optimize's variants, a derived file's gate), written atomically."""
    from speechperf.outputs import write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    data = paths.absolute_dict(data, Path.cwd())  # the child reads it from ``path``'s folder
    write_text_atomic(path, yaml.safe_dump(data, sort_keys=False), "config")
    return path
