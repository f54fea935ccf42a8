"""Datasets: reading every supported format into ``Sample`` lists, subsets and length statistics."""

from __future__ import annotations

from pathlib import Path

from speechperf.data.audio import AudioError, read_audio, resample, write_wav
from speechperf.data.formats import (
    DatasetError,
    load_fairseq_s2t,
    load_npy,
    load_npz,
    load_raw,
    load_text,
    require_file,
)
from speechperf.data.generated import generated_audio, generated_text
from speechperf.data.sample import Sample


def size_note(general, used: int) -> str | None:
    """The note of a dataset that ``dataset_size`` cuts (``used`` samples of more), or None: a cut is never
    silent."""
    if general.dataset_type == "generated" or general.dataset_size is None:
        return None
    from speechperf.data.references import dataset_count

    total = dataset_count(general)
    if used >= total:
        return None
    return (
        f"using {used} of {total} samples of {Path(general.dataset_path).name} (dataset_size {general.dataset_size};"
        " --dataset-size N for another count)"
    )


#: What the first stage of each role takes.
AUDIO_ROLES = ("s2t", "s2u", "vad", "s2s")


def load_dataset(general, first_role: str) -> list[Sample]:
    """The samples a run measures, read as ``general`` (a GeneralConfig) says, for a first stage of ``first_role``."""
    check_dataset_config(general)
    kind, size = general.dataset_type, general.dataset_size
    if kind == "generated":
        n = size or 8
        lo, hi = general.generated_seconds
        if first_role in AUDIO_ROLES:
            return generated_audio(n, general.sample_rate, (lo, hi), general.seed)
        return generated_text(n, (lo, hi), general.seed)
    path = Path(general.dataset_path)
    if kind == "raw":
        samples = load_raw(path, general.sample_rate, size)
    elif kind == "fairseq_s2t":
        samples = load_fairseq_s2t(path, general.sample_rate, size)
    elif kind == "npz":
        samples = load_npz(path, general.sample_rate, general.feat_dim, size)
    elif kind == "npy":
        samples = load_npy(path, general.sample_rate, general.feat_dim, general.unsafe_pickle_runs_code, size)
    elif kind == "text":
        samples = load_text(path, size)
    else:  # the config loader already checked the choice
        raise DatasetError(f"unknown dataset_type {kind!r}")
    if not samples:
        raise DatasetError(f"{path} holds no samples")
    check_fits(samples, first_role, f"{path} ({kind})")
    return samples


def check_dataset_config(general) -> None:
    """What can be checked of the dataset keys without reading the dataset (``config check`` runs this too)."""
    kind = general.dataset_type
    if kind == "generated":
        if general.dataset_path:
            raise DatasetError(
                f"dataset_path {general.dataset_path!r} is set but dataset_type is 'generated'; "
                "set dataset_type (--dataset-type raw|npz|npy|text)"
            )
        seconds = tuple(general.generated_seconds)
        if len(seconds) != 2 or not 0 < seconds[0] <= seconds[1]:
            raise DatasetError(
                f"generated_seconds {list(seconds)} must be [shortest, longest] with 0 < shortest <= longest"
            )
        return
    if not general.dataset_path:
        raise DatasetError(f"dataset_type {kind!r} needs a dataset path (--dataset-path or general.dataset_path)")
    require_file(Path(general.dataset_path), "manifest" if kind in ("raw", "fairseq_s2t") else "dataset file")


#: What the first stage of each role can take.
TAKES = {
    "s2t": ("audio", "features"),
    "s2u": ("audio", "features"),
    "s2s": ("audio", "features"),
    "vad": ("audio",),
    "mt": ("text", "tokens"),
    "tts": ("text", "tokens"),
    "unit_vocoder": ("tokens",),
}


def check_fits(samples: list[Sample], first_role: str, what: str) -> None:
    """Refuse, before anything is loaded, a dataset whose samples the first stage cannot take."""
    allowed = TAKES.get(first_role)
    if allowed is None:
        return
    for sample in samples:
        if sample.kind not in allowed:
            raise DatasetError(
                f"{what}: sample {sample.id!r} is {sample.kind}; the first stage ({first_role}) "
                f"takes {' or '.join(allowed)}"
            )


__all__ = [
    "AUDIO_ROLES",
    "AudioError",
    "DatasetError",
    "Sample",
    "check_dataset_config",
    "generated_audio",
    "generated_text",
    "load_dataset",
    "load_fairseq_s2t",
    "load_npy",
    "load_npz",
    "load_raw",
    "load_text",
    "read_audio",
    "size_note",
    "resample",
    "write_wav",
]
