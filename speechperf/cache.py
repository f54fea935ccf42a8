"""Where speechperf keeps what it builds on demand: reference models, exported weights, FLOP counts, compare runs.

One folder: ``SPEECHPERF_CACHE_DIR`` when set, else the platform's user cache folder (``platformdirs``):
``$XDG_CACHE_HOME/speechperf`` or ``~/.cache/speechperf`` on Linux, ``~/Library/Caches/speechperf`` on macOS,
``%LOCALAPPDATA%\\speechperf\\Cache`` on Windows. The test suite points the variable at a temporary folder so that
a run never writes into the user's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "SPEECHPERF_CACHE_DIR"
APP_NAME = "speechperf"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return platformdirs.user_cache_path(APP_NAME, appauthor=False)
