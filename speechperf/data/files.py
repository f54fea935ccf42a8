"""The files a dataset is read from: refused unless they are regular data files, and text read as lines.

Every reader of a dataset file (manifests, transcripts, text datasets, reference files) goes through ``read_lines``,
so a file that is not UTF-8 says which file, line, column and byte, the same way everywhere. ``file_problem`` (speechperf.outputs, shared with the config and zoo readers) is
why a path cannot be read as data: missing, a folder, not a regular file (a device such as /dev/zero, a FIFO that
would block the read forever), or a file of the kernel's /proc or /sys (``/proc/self/mem`` passes for a regular
file, yet reading it fails or returns the process's own memory).
"""

from __future__ import annotations

from pathlib import Path

from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import KERNEL_FOLDERS, file_problem

__all__ = ["KERNEL_FOLDERS", "DatasetError", "file_problem", "read_lines", "require_file"]


class DatasetError(SpeechperfError):
    """A dataset file that cannot be used; the message names the file (and line) and what is wrong."""


def require_file(path: Path, what: str = "dataset file") -> None:
    """Refuse ``path`` unless it is a regular data file, with a message that says what it is instead."""
    problem = file_problem(Path(path))
    if problem is None:
        return
    if problem == "not found":
        raise DatasetError(f"{what} not found: {shorten_path(path)}")
    if problem == "is a folder":
        inside = sorted(p.name for p in Path(path).glob("*.tsv"))[:3]
        hint = f" (it holds {', '.join(inside)})" if inside else ""
        raise DatasetError(f"{what} {shorten_path(path)} is a folder; give the file itself{hint}")
    raise DatasetError(f"{what} {shorten_path(path)} {problem}")


def read_lines(path: Path, what: str, hint: str = "") -> list[str]:
    """The lines of the UTF-8 text file ``path`` (a byte-order mark, as some Windows editors write, dropped);
    ``what`` names it in errors ("manifest", "transcript file"), ``hint`` is added to the not-UTF-8 error."""
    require_file(path, what)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError(f"{what} {shorten_path(path)} cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(
            f"{shorten_path(path)}:{line}: {what} is not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} "
            f"(save it as UTF-8){hint}"
        ) from None
    return text.splitlines()
