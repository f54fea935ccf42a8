"""The one result document every measuring command writes (docs/results.md).

One envelope for every kind of run, the same keys in the same order, so that a reader (``diff``, the store,
``history``, the HTML report, a user's script) dispatches on ``kind`` instead of guessing from the keys:

- ``kind``: what wrote it (``KINDS``), ``schema_version``: the envelope's version, ``complete``: False while the run
  is going on or after Ctrl-C (the file then holds what was measured so far);
- ``command``: the command line, ``config``: the merged config (or None), ``environment``: machine, packages, git
  commit and the load seen while timing (``speechperf.results.environment``);
- ``rows``: the table of the run, one dict per row, the figures named as in ``speechperf.results.figures`` (the same
  name and unit in every kind: fractions, not percents; milliseconds for latencies);
- ``notes`` and ``warnings``: what the console printed besides the table;
- then the kind's own fields (bench: ``result`` with every raw timing; compare: ``cells``, ``runs``, ...).

A file of an older schema version is upgraded on read (``speechperf.results.upgrade``, a version map as pyperf
keeps one); a newer one is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import shorten_path
from speechperf.outputs import file_problem, write_text_atomic
from speechperf.results import upgrade
from speechperf.results.version import SCHEMA_VERSION, DocumentError

#: Every kind of document, with what writes it.
KINDS = {
    "bench": "speechperf bench",
    "compare": "speechperf compare",
    "compare-best": "speechperf compare --best",
    "serving": "speechperf compare --scenario",
    "optimize": "speechperf optimize",
    "tune": "speechperf tune",
    "loadgen": "speechperf loadgen",
    "diff": "speechperf diff",
    "history": "speechperf history",
    "check": "speechperf check",
    "profile": "speechperf profile",
}
#: The envelope's keys, in the order they are written; a kind's own fields follow them.
ENVELOPE = ("kind", "schema_version", "complete", "command", "config", "environment", "rows", "notes", "warnings")


#: The command line of this process's command, set by the CLI (``speechperf.cli``) before the command runs.
_command: list[str] = []


def set_command(argv: list[str]) -> None:
    _command[:] = list(argv)


def current_command() -> list[str]:
    """The command line the CLI was given (``speechperf bench -b torch ...``); [] when used as a library."""
    return list(_command)


@attrs.define
class Document:
    """One run's results: the envelope and the kind's own fields (``body``)."""

    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    config: dict[str, Any] | None = None
    command: list[str] = attrs.Factory(current_command)
    environment: dict[str, Any] = attrs.Factory(dict)
    rows: list[dict[str, Any]] = attrs.Factory(list)
    notes: list[str] = attrs.Factory(list)
    warnings: list[str] = attrs.Factory(list)
    complete: bool = False
    body: dict[str, Any] = attrs.Factory(dict)
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        clash = sorted(set(self.body) & set(ENVELOPE))
        if clash:  # a programming error: a kind's field would overwrite the envelope
            raise ValueError(f"a {self.kind} document's own fields may not be named {', '.join(clash)}")
        head = {name: getattr(self, name) for name in ENVELOPE}
        return {**head, **self.body}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False, default=str) + "\n"

    def write(self, path: Path, what: str = "--output") -> None:
        """Atomically (``speechperf.outputs``): a reader sees the last complete snapshot, never a torn file."""
        write_text_atomic(path, self.dumps(), what)

    def __getitem__(self, key: str) -> Any:
        """``doc["cells"]``: an envelope key or one of the kind's fields, as in the JSON file."""
        if key in ENVELOPE:
            return getattr(self, key)
        return self.body[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    @classmethod
    def from_json(cls, data: Any, what: str = "document") -> Document:
        """A document as read from JSON: upgraded from an older schema version; a newer one or a foreign object is a
        ``DocumentError`` naming ``what``."""
        if not isinstance(data, dict):
            raise DocumentError(f"{what}: not a speechperf result document (the top level is no JSON object)")
        data = upgrade.to_current(data, what)
        kind = data.get("kind")
        if kind not in KINDS:
            raise DocumentError(
                f"{what}: kind {kind!r} is not a speechperf result document kind; known: {', '.join(KINDS)}"
            )
        head = {name: data.get(name) for name in ENVELOPE if name not in ("kind", "schema_version")}
        return cls(
            kind=kind,
            config=head["config"],
            command=list(head["command"] or []),
            environment=dict(head["environment"] or {}),
            rows=list(head["rows"] or []),
            notes=list(head["notes"] or []),
            warnings=list(head["warnings"] or []),
            complete=bool(head["complete"]),
            body={k: v for k, v in data.items() if k not in ENVELOPE},
        )


def loads(text: str, what: str = "document") -> Document:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DocumentError(f"{what}: not JSON ({str(exc).splitlines()[0]})") from None
    return Document.from_json(data, what)


def read(path: str | Path, kinds: tuple[str, ...] | None = None) -> Document:
    """The document in ``path``; ``kinds``: the kinds the caller takes (another is refused, naming those)."""
    what = shorten_path(path)
    if (problem := file_problem(path)) is not None:  # before the read: a FIFO blocks it, /dev/zero never ends
        raise DocumentError(f"{what} {problem}; a speechperf result document is a JSON file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DocumentError(f"{what}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DocumentError(f"{what}: not JSON (not UTF-8 text)") from None
    doc = loads(text, what)
    if kinds is not None and doc.kind not in kinds:
        raise DocumentError(f"{what}: a {doc.kind} document; this command takes {' or '.join(kinds)} documents")
    return doc
