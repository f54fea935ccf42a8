"""The results store: one SQLite file (the standard library's ``sqlite3``) that every measuring run (bench,
compare, optimize, loadgen, compare --scenario: every result document's kind) is appended to, and
``speechperf history`` reads (docs/history.md, "Schema").

Tables:

- ``speechperf_schema(version)``: one row, the schema version this file was made with. A file without it is not a
  speechperf store and is refused; a version newer than ``SCHEMA_VERSION`` is refused (an older speechperf must not
  write rows a newer one would misread).
- ``runs``: one row per run: when, its document's kind (the ``command`` column), the config's identity, the
  backends, the git state of the folder the command ran in, the machine, the package versions, and the run's whole JSON document with its
  ``result_schema_version`` (a version 1 document stored before the envelope keeps its own figure names; readers
  map them, ``speechperf.store.history``).
- ``metrics``: one row per (run, cell, stage, metric) with a numeric value, for querying and plotting.

Writers: WAL mode and a busy timeout, each append one ``BEGIN IMMEDIATE`` transaction, so that processes writing
at once (several benches, ``compare --jobs``, CI jobs on one machine) queue instead of failing or losing rows.
A file that is not a speechperf store (random bytes, another program's SQLite database, a damaged file) is refused
with one line before anything is written to it: it is opened read-only first, and only a file that passes is opened
for writing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import check_output_path

SCHEMA_VERSION = 1
#: How long a writer waits for another's transaction before giving up (ms): an append takes milliseconds, so this
#: is only reached when a process holds the file locked for good.
BUSY_TIMEOUT_MS = 60_000
_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS speechperf_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    command TEXT NOT NULL,
    config_hash TEXT,
    model TEXT,
    backends TEXT NOT NULL,
    complete INTEGER NOT NULL,
    exit_code INTEGER,
    cwd TEXT,
    git_commit TEXT,
    git_dirty INTEGER,
    hostname TEXT,
    cpu TEXT,
    cores INTEGER,
    python TEXT,
    packages TEXT,
    result_schema_version INTEGER,
    result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    backend TEXT,
    cell TEXT,
    stage TEXT,
    metric TEXT NOT NULL,
    value REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(metric, backend);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs(time);
"""


class StoreError(SpeechperfError):
    """A store file that cannot be used: the message names the file and what is wrong with it."""


def _refuse(path: Path, why: str) -> StoreError:
    return StoreError(f"--store {shorten_path(path)}: {why}; pass another --store PATH, or --no-store")


def check_store(path: Path) -> Path:
    """Refuse ``path`` now (before anything is measured) unless it is a new file or a speechperf store of a known
    version; returns where it really is (a symlink's target). Nothing is written to an existing file."""
    target = check_output_path(path, "--store")  # a FIFO, a device, a folder, an unwritable folder: one line
    if not target.exists() or target.stat().st_size == 0:
        return target
    with open(target, "rb") as f:
        head = f.read(len(_MAGIC))
    if head != _MAGIC:
        raise _refuse(path, "not an SQLite database (its first bytes are not SQLite's header)")
    sides = [target.with_name(target.name + suffix) for suffix in ("-wal", "-shm")]
    had = [side.exists() for side in sides]
    try:
        return _check_tables(path, target)
    except StoreError:
        for side, existed in zip(sides, had):  # SQLite made them to read the file; it is left as it was found
            if not existed:
                side.unlink(missing_ok=True)
        raise


def _check_tables(path: Path, target: Path) -> Path:
    try:
        with closing(sqlite3.connect(f"{target.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)) as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not names:  # a store another process is creating right now (its tables not yet committed)
                return target
            if "speechperf_schema" not in names:
                shown = ", ".join(sorted(names)[:5]) or "none"
                raise _refuse(path, f"an SQLite database, but not a speechperf results store (its tables: {shown})")
            versions = [row[0] for row in db.execute("SELECT version FROM speechperf_schema")]
            db.execute("SELECT count(*) FROM runs").fetchone()  # reads the table's pages: a damaged file fails here
    except sqlite3.DatabaseError as exc:
        raise _refuse(path, f"the database cannot be read ({exc})") from None
    if len(versions) != 1 or not isinstance(versions[0], int):
        raise _refuse(path, f"its speechperf_schema table holds {versions!r}, not one version number")
    if versions[0] > SCHEMA_VERSION:
        raise _refuse(
            path,
            f"store schema version {versions[0]} is newer than this speechperf's ({SCHEMA_VERSION}); "
            "upgrade speechperf to use it",
        )
    return target


@contextmanager
def connect(path: Path, write: bool) -> Iterator[sqlite3.Connection]:
    """A checked connection to the store at ``path`` (``check_store``); ``write`` creates the file and its tables
    when new. The connection commits nothing by itself: each writer opens its own transaction."""
    target = check_store(path)
    if not write and not target.exists():
        raise StoreError(
            f"--store {shorten_path(path)}: no such store; a bench, compare, optimize or loadgen run makes it"
        )
    try:
        db = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be opened ({exc})") from None
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if write:
            db.execute("PRAGMA journal_mode = WAL")  # readers never block the writer, nor it them
            db.execute("BEGIN IMMEDIATE")
            # statement by statement: executescript would commit the transaction it runs in
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            if db.execute("SELECT count(*) FROM speechperf_schema").fetchone()[0] == 0:
                db.execute("INSERT INTO speechperf_schema (version) VALUES (?)", (SCHEMA_VERSION,))
            db.execute("COMMIT")
        yield db
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be used ({exc})") from None
    finally:
        db.close()


def append(path: Path, record: dict[str, Any], metrics: list[tuple[str | None, str | None, str | None, str, float]]):
    """Append one run (``record``: the ``runs`` columns but ``id``) and its ``metrics`` rows (backend, cell, stage,
    metric, value) in one transaction; returns the new run's id."""
    columns = list(record)
    with connect(path, write=True) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            cursor = db.execute(
                f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [json.dumps(v) if isinstance(v, (dict, list)) else v for v in record.values()],
            )
            run_id = cursor.lastrowid
            db.executemany(
                "INSERT INTO metrics (run_id, backend, cell, stage, metric, value) VALUES (?, ?, ?, ?, ?, ?)",
                [(run_id, *row) for row in metrics],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return run_id


def select(path: Path, sql: str, params: list[Any]) -> list[sqlite3.Row]:
    """Rows of a read-only query on the store at ``path``."""
    with connect(path, write=False) as db:
        db.row_factory = sqlite3.Row
        return list(db.execute(sql, params))
