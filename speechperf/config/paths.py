"""Paths written in a config: a relative one is read from the config file's folder, so a config and its data move
together and run from any folder; one given on the command line (``--dataset-path``, ``--set``) is read from the
working folder, as a shell user expects. The loader makes every path of a file absolute, so a merged config
(``config show``, the files compare and optimize write for their children) names the same files from anywhere; it
keeps what was written, so a file that is not there is refused naming the key, the config and the folder it was
read from (``check_written_paths``, before anything is loaded)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import shorten
from speechperf.values import ConfigError

#: Keys whose value names a file or folder: the run's (general) and a stage's (also as a default in general).
PATH_KEYS = ("dataset_path", "reference_path", "clean_reference_dir", "dump_speech_waveforms_dir", "path", "model_dir")
#: Of those, the ones that must exist before a run (the dump folder is made by the run).
INPUT_PATH_KEYS = ("dataset_path", "reference_path", "clean_reference_dir", "path", "model_dir")


@attrs.frozen
class WrittenPath:
    """A relative path as a config file wrote it: ``key`` (``general.dataset_path``, ``stage1.path.torch``),
    the text, where (``file:line``), the folder it was read from and the absolute path it names."""

    key: str
    written: str
    at: str
    base: str
    absolute: str


def absolute(value: str, base: Path) -> str:
    """``value`` (``~`` expanded) as an absolute path, a relative one joined to ``base``; ``..`` folded, links
    kept."""
    return os.path.abspath(Path(base) / Path(value).expanduser())


def resolve(data: dict[str, Any], base: Path, where: Callable[..., str]) -> list[WrittenPath]:
    """Make the path keys of a config's sections (``data``, as read from YAML) absolute against ``base``, in place;
    returns the relative ones as written. A value that is not a string is left for the type checks."""
    base = Path(os.path.abspath(base))
    written = []
    for section, values in data.items():
        if not isinstance(values, dict):
            continue
        for k in PATH_KEYS:
            # a stage's ``path`` may be a file per backend: each is a path, named ``stage1.path.torch``
            holder, names = (values[k], list(values[k])) if isinstance(values.get(k), dict) else (values, [k])
            for one in names:
                file = holder.get(one)
                if not isinstance(file, str) or not file:
                    continue
                holder[one] = absolute(file, base)
                if not Path(file).expanduser().is_absolute():
                    key = f"{section}.{k}" + (f".{one}" if holder is not values else "")
                    written.append(WrittenPath(key, file, where(section, k), str(base), holder[one]))
    return written


def absolute_dict(data: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """A copy of ``data`` (a config as ``BenchConfig.to_dict`` gives it) with every path absolute against ``base``:
    a config written for another process to read from its own folder."""
    copy = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    for values in copy.values():
        if isinstance(values, dict) and isinstance(values.get("path"), Mapping):
            values["path"] = dict(values["path"])
    resolve(copy, base, lambda *keys: "")
    return copy


def check_written_paths(cfg) -> None:
    """Refuse a relative path of the config file (``cfg``: a BenchConfig) that names nothing, in one line naming
    the key, where it is written and the folder it was read from; one the command line replaced is not checked."""
    for one in cfg.written_paths:
        if one.key.split(".")[1] not in INPUT_PATH_KEYS or _value(cfg, one.key) != one.absolute:
            continue
        if not Path(one.absolute).exists():
            origin = (
                "the working folder (a config read from stdin has no folder of its own)"
                if one.at.startswith("<stdin>")
                else "the config file's folder"
            )
            raise ConfigError(
                f"{one.at}: {one.key} = {shorten(one.written)}: {one.absolute} not found; a relative path in a "
                f"config is read from {origin}, {one.base}"
            )


def _value(cfg, key: str) -> Any:
    """The merged value of ``key`` (``general.dataset_path``, ``stage2.path.torch``) in ``cfg``, or None."""
    section, name, *backend = key.split(".")
    if section == "general":
        holder: Any = cfg.general
    elif section.removeprefix("stage").isdigit() and int(section[5:]) <= len(cfg.stages):
        holder = cfg.stages[int(section[5:]) - 1]
    else:
        return None
    value = getattr(holder, name, None)
    if backend:
        return value.get(backend[0]) if isinstance(value, dict) else None
    return value
