"""Where speechperf keeps what it builds on demand: reference models, exported weights, generated data.

One folder, ``~/.cache/speechperf`` unless ``SPEECHPERF_CACHE_DIR`` says otherwise; the test suite points it at a
temporary folder so that a run never writes into the user's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "SPEECHPERF_CACHE_DIR"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "speechperf"
