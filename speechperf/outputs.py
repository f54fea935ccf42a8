"""Files a command writes (results JSON, CSV / Markdown exports, dataset subsets, caches, built models): checked
before any work starts and written atomically. This is the one atomic writer of speechperf: ``atomic_path`` for a
file, ``atomic_folder`` for a folder.

Atomic means: the data goes to a temporary name beside the target, is flushed to disk (``fsync`` of the file), then
renamed over the target (``os.replace``), and the folder holding it is fsynced so that the rename itself survives a
crash. A reader, or the next run after a power cut, sees the old file or the new one, never a torn one; a writer that
fails leaves the old file as it was.

``check_output_path`` runs before a command measures anything, so a path that cannot be written fails in a second,
not after an hour of measuring. Only a regular file (or a new path) is ever replaced: a device such as /dev/full, a
FIFO or a folder is refused, because the atomic rename would silently put a regular file in its place. A symlink is
written through: its target is replaced and the link stays a link.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from speechperf.errors import SpeechperfError


class OutputError(SpeechperfError):
    """An output path that cannot be written; the message names the option, the path and why."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _target(path: Path, what: str) -> Path:
    """Where ``path`` is really written: a symlink's final target; refused unless a regular file or absent."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise OutputError(f"{what} {path}: cannot be written: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        shown = f"{path} (-> {target})" if target != Path(path).absolute() else str(path)
        raise OutputError(f"{what} {shown} is {_kind(mode)}; only a regular file (or a new path) is written")
    return target


def check_output_path(path: str | Path, what: str) -> Path:
    """Refuse ``path`` now if it cannot be written later; ``what`` names it in errors (e.g. ``--csv``).

    The folder is created if missing, and a temporary file is made and removed in it: permission bits do not tell
    (root may write anywhere by them, yet not in /proc), so writing is the only real test.
    """
    target = _target(Path(path), what)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".check"):
            pass
    except OSError as exc:
        raise OutputError(
            f"{what} {path}: its folder {target.parent} is not writable ({exc.strerror or type(exc).__name__})"
        ) from None
    return target


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file, or a folder: its entries) to disk. A folder cannot be opened on Windows; there the
    rename is made durable by the file system itself."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    try:
        fd = os.open(path, flags)
    except OSError:
        if path.is_dir():
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path, what: str = "output") -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; fsynced and renamed over ``path`` (its symlink target) when the
    block ends without an error, removed otherwise. It keeps the suffix, for writers that add one (``np.savez``)."""
    target = _target(Path(path), what)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial{target.suffix}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        _fsync(tmp)
        os.replace(tmp, target)
        _fsync(target.parent)
    except OSError as exc:
        raise OutputError(f"{what} {path}: cannot be written: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_folder(path: str | Path, what: str = "output") -> Iterator[Path]:
    """A new temporary folder beside ``path`` to fill; when the block ends without an error, every file in it is
    fsynced and it replaces ``path`` (an old folder there is removed first); removed otherwise. A half-finished
    folder is never seen under ``path``. Errors pass through unchanged (a build's own errors say more)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", suffix=".partial", dir=target.parent))
    try:
        yield work
        for file in (p for p in work.rglob("*") if p.is_file() and not p.is_symlink()):
            _fsync(file)
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
        _fsync(target.parent)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def write_text_atomic(path: str | Path, text: str, what: str = "output") -> None:
    """Write ``text`` (UTF-8) to ``path`` so that a reader never sees a half-written file."""
    with atomic_path(path, what) as tmp:
        tmp.write_text(text, encoding="utf-8")


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's content: what identifies a built, cached or downloaded model file. Remembered within the
    process per (real path, size, mtime), so hashing the same large file twice reads it once; a changed file has
    another size or mtime and is read again."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return _sha256_of(real, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=1024)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:  # size and mtime_ns: only the cache key
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
