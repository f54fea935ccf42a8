"""Files a command writes (results JSON, CSV / Markdown exports, dataset subsets): checked before any work starts
and written atomically.

``check_output_path`` runs before a command measures anything, so a path that cannot be written fails in a second,
not after an hour of measuring. Only a regular file (or a new path) is ever replaced: a device such as /dev/full, a
FIFO or a folder is refused, because the atomic rename would silently put a regular file in its place. A symlink is
written through: its target is replaced and the link stays a link.
"""

from __future__ import annotations

import contextlib
import os
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


@contextlib.contextmanager
def atomic_path(path: str | Path, what: str = "output") -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed over ``path`` (its symlink target) when the block ends
    without an error, removed otherwise. It keeps the suffix, for writers that add one (``np.savez``)."""
    target = _target(Path(path), what)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial{target.suffix}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{what} {path}: cannot be written: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_text_atomic(path: str | Path, text: str, what: str = "output") -> None:
    """Write ``text`` (UTF-8) to ``path`` so that a reader never sees a half-written file."""
    with atomic_path(path, what) as tmp:
        tmp.write_text(text, encoding="utf-8")
