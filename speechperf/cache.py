"""Where speechperf keeps what it builds on demand: reference models, exported weights, FLOP counts, compare runs;
and the hash of the reference models' definition sources that built models and FLOP counts are keyed on.

One folder: ``SPEECHPERF_CACHE_DIR`` when set, else the platform's user cache folder (``platformdirs``):
``$XDG_CACHE_HOME/speechperf`` or ``~/.cache/speechperf`` on Linux, ``~/Library/Caches/speechperf`` on macOS,
``%LOCALAPPDATA%\\speechperf\\Cache`` on Windows. The test suite points the variable at a temporary folder so that
a run never writes into the user's cache.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from collections.abc import Collection
from pathlib import Path

import platformdirs

CACHE_ENV = "SPEECHPERF_CACHE_DIR"
APP_NAME = "speechperf"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return platformdirs.user_cache_path(APP_NAME, appauthor=False)


def plugin_cache_dir(name: str) -> Path:
    """The folder a backend plugin keeps what it builds on demand in (compiled programs, converted models):
    ``<cache>/plugins/<name>``, made if missing, under the cache of ``cache_dir`` (so ``SPEECHPERF_CACHE_DIR``
    moves it with the rest, and the test suite's temporary cache holds it). ``name`` is the backend's registered
    name; one folder per backend, shared by its processes: write into it atomically (write a temporary file in the
    folder, then ``os.replace`` it into place), as two runs may build the same file at once."""
    if not name or "/" in name or name in (".", "..") or os.sep in name:
        raise ValueError(f"plugin_cache_dir({name!r}): give the backend's registered name, a plain folder name")
    folder = cache_dir() / "plugins" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def definition_folders() -> list[Path]:
    """The folders whose sources define the reference models: the catalog (``speechperf/zoo/``) and each backend's
    framework definitions (``backends/<name>/models/``, installed as ``speechperf/backends/<name>/models/``)."""
    folders = [Path(__file__).parent / "zoo"]
    spec = importlib.util.find_spec("speechperf.backends")  # the package's location; imports no framework
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        folders += sorted(p for p in Path(root).glob("*/models") if p.is_dir())
    return folders


def definition_sources(module: str | None = None, models: Collection[str] = ()) -> list[Path]:
    """The ``.py`` files that define reference model ``module``: its own (``zoo/<module>.py``, each backend's
    ``models/<module>.py``) and those every model shares (catalog, build, layers), i.e. every file of the
    definition folders except another model's (``models``: every model module). None: every file."""
    others = {f"{m}.py" for m in models if m != module}
    return [
        path
        for folder in definition_folders()
        for path in sorted(folder.glob("*.py"))
        if module is None or path.name not in others
    ]


@functools.cache
def definition_hash(module: str | None = None, models: tuple[str, ...] = ()) -> str:
    """A hash of ``definition_sources(module, models)``: what a built zoo model and a FLOP count are keyed on, so
    that editing a model's definition rebuilds it and recounts it (a hard-coded version number never changes when
    the code does). Cached for the process: the sources do not change under a running program."""
    digest = hashlib.sha256()
    for path in definition_sources(module, models):
        digest.update(f"{path.parent.parent.name}/{path.parent.name}/{path.name}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
