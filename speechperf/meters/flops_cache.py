"""Analytic FLOP counts kept on disk, so that a second run of the same model at the same shapes does not count again.

Counting is much slower than running (paddle traces a program per input shape; the default paddle bench spent ~90%
of its time on it). A count depends only on the model, the backend that counted it and the shapes of the call, so
it is stored under ``<cache>/flops/<key>.json`` where the key hashes:

- the content (sha256) of every file the session was loaded from: ``spec.path``, ``spec.weights`` and any file named
  in ``spec.factory_kwargs`` (a changed model file is a new key: a stale count is never used);
- the spec's format, factory, entry and options; the backend's name and framework version; the hash of the
  reference models' definition sources (``speechperf.cache.definition_hash``: an eager model is its code, so an
  edited definition recounts) and the content of the backend's FLOP counter module (a fixed counter recounts);
- each feed's name, shape and dtype, and the value of 0-d feeds (silero's ``sr`` picks a branch of its graph).

A session without a ``spec`` (one built in memory) is counted every time. Files are written atomically (a
temporary file renamed into place); one that cannot be read is ignored and counted again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from speechperf import cache
from speechperf.backend import hooks
from speechperf.errors import SpeechperfError
from speechperf.meters import onnx_flops
from speechperf.meters.flops import FlopCount
from speechperf.outputs import OutputError, file_sha256, write_text_atomic

SCHEMA = 1


class DiskFlopCache:
    """Stands in for ``backend`` where FLOPs are counted: ``count_flops`` reads a stored count or counts and stores."""

    def __init__(self, backend, root: Path | None = None):
        self._backend = backend
        self.root = Path(root) if root is not None else cache.cache_dir() / "flops"
        self.hits = 0
        self.misses = 0
        self._models: dict[int, tuple[object, str | None]] = {}
        self._version: str | None = None

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def model_key(self, session) -> str | None:
        """A hash of what the session was loaded from; None where that is not known."""
        if id(session) in self._models:
            return self._models[id(session)][1]
        spec = session.spec
        key = None if spec is None else self._spec_key(spec)
        self._models[id(session)] = (session, key)  # the session is kept so that its id is not reused
        return key

    def _spec_key(self, spec) -> str | None:
        files = [p for p in (spec.path, spec.weights) if p is not None]
        kwargs = {}
        for name, value in sorted(dict(spec.factory_kwargs).items()):
            if isinstance(value, (str, Path)) and Path(value).is_file():
                files.append(Path(value))
            else:
                kwargs[name] = value
        try:
            hashes = [file_sha256(Path(p)) for p in files]
        except OSError:
            return None
        if self._version is None:
            self._version = f"{self._backend.availability().version} {self._counter_hash()}"
        parts = {
            "schema": SCHEMA,
            "definitions": cache.definition_hash(),  # an eager zoo model is its definition code plus weights
            "backend": self._backend.name,
            "framework": self._version,
            "format": spec.format,
            "factory": spec.factory,
            "kwargs": kwargs,
            "entry": spec.entry,
            "options": dict(spec.options),
            "files": hashes,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()

    def _counter_hash(self) -> str:
        # Backends that load ONNX count with the shared counter; a change to it changes their counts too. (Hashed
        # for every backend: reading which modules a counter imports is not worth it for a cache.)
        try:
            counter = hooks(self._backend).capability("flops").__file__
            if not counter:  # a counter module without a file: nothing to hash
                return ""
            return f"{file_sha256(counter)} {file_sha256(onnx_flops.__file__ or '')}"
        except (OSError, SpeechperfError):  # no counter module
            return ""

    def count_flops(self, session, feeds: Mapping[str, np.ndarray]) -> FlopCount:
        model = self.model_key(session)
        if model is None:
            return self._backend.count_flops(session, feeds)
        shapes = sorted(
            (
                name,
                list(np.shape(v)),
                str(getattr(v, "dtype", type(v).__name__)),
                np.asarray(v).item() if np.ndim(v) == 0 else None,
            )
            for name, v in feeds.items()
        )
        key = hashlib.sha256(json.dumps([model, shapes], default=str).encode()).hexdigest()
        path = self.root / key[:2] / f"{key}.json"
        stored = _read(path)
        if stored is not None:
            self.hits += 1
            return stored
        self.misses += 1
        count = self._backend.count_flops(session, feeds)
        _write_atomic(
            path,
            {
                "schema": SCHEMA,
                "total": count.total,
                "source": count.source,
                "uncounted": list(count.uncounted),
                "by_kind": dict(count.by_kind),
            },
        )
        return count


def _read(path: Path) -> FlopCount | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            return None
        return FlopCount(
            int(data["total"]),
            str(data["source"]),
            tuple(data["uncounted"]),
            by_kind={str(k): int(v) for k, v in data["by_kind"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as JSON (speechperf.outputs' atomic writer); a cache that cannot be written is only a cache
    (the count is still returned)."""
    with contextlib.suppress(OutputError):
        write_text_atomic(path, json.dumps(data), "FLOP cache file")
