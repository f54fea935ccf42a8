"""The configs that ship with speechperf (``configs/*.yaml``, speechperf.data.shipped): found by name, and listed
one line each (``speechperf config list``)."""

from __future__ import annotations

from pathlib import Path

from speechperf.config.yaml_reader import read_config_yaml
from speechperf.data import shipped
from speechperf.errors import SpeechperfError


def names() -> list[str]:
    """The shipped configs' names (``VAD``, ``WhisperTinyEn``), sorted."""
    return sorted(p.stem for p in shipped.folder().glob("*.yaml"))


def find(given: str | Path) -> Path:
    """``given`` if such a file exists; else the shipped config it names (``VAD`` or ``VAD.yaml``, no folder part);
    else ``given`` unchanged, for the loader to refuse as not found."""
    path = Path(given)
    if path.exists() or path.name != str(given):
        return path
    for name in (path.name, f"{path.name}.yaml"):
        if (candidate := shipped.folder() / name).is_file():
            return candidate
    return path


def summary(path: Path) -> str:
    """One line of a config: its model type, its stages' models and the first phrase of its opening comment."""
    text = path.read_text(encoding="utf-8")
    try:
        data = read_config_yaml(text, str(path))
    except SpeechperfError as exc:
        return f"(unreadable: {exc})"
    general = data.get("general") or {}
    models = [
        str(section.get("model") or section.get("text_frontend") or Path(str(section.get("path") or "?")).name)
        for key, section in data.items()
        if key.startswith("stage") and isinstance(section, dict)
    ]
    comment = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("# ").strip())
    phrase = " ".join(comment).split(": ")[0].split(". ")[0].rstrip(".")
    return f"{general.get('model_type', 'S2T')}: {' + '.join(models)}" + (f" - {phrase}" if phrase else "")
