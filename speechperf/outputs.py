"""Files a command writes (results JSON, CSV / Markdown exports, dataset subsets, caches, built models, traces,
plots): checked before any work starts and written atomically. This is the one atomic writer of speechperf:
``atomic_path`` for a file, ``atomic_folder`` for a folder.

Atomic means: the data goes to a temporary name beside the target, is flushed to disk (``fsync`` of the file), then
renamed over the target (``os.replace``), and the folder holding it is fsynced so that the rename itself survives a
crash. A reader, or the next run after a power cut, sees the old file or the new one, never a torn one; a writer that
fails leaves the old file as it was.

``check_output_path`` (a file) and ``check_output_folder`` (a folder a command fills) run before a command measures
anything, so a path that cannot be written fails in a second, not after an hour of measuring. Every command that
writes checks each of its outputs through them; nothing else decides what may be written. Only a regular file (or a
new path) is ever replaced: a device such as /dev/full, a FIFO or a folder is refused, because the atomic rename
would silently put a regular file in its place; where a folder is wanted, a file is refused. A name longer than the
file system allows (NAME_MAX per name, PATH_MAX in all), a parent that is a file, and a folder that cannot be
written are refused with one line. A symlink is written through: its target is replaced and the link stays a link.
``refuse_same_file`` refuses an output that is the command's own input (``data subset in.tsv -o in.tsv``).

``file_problem`` is the other side, every file a command reads (a dataset file, a config, a zoo manifest, a feeds
``.npz``): why it cannot be read as a data file, before a read that would block on a FIFO or never end on a device.
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

from speechperf.errors import SpeechperfError, shorten_path


class OutputError(SpeechperfError):
    """An output path that cannot be written; the message names the option, the path and why."""


def _kind(mode: int, regular: str = "not a regular file") -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return regular if stat.S_ISREG(mode) else "not a regular file"


#: Folders whose files are the kernel's, not data, though some (/proc/self/mem) stat as regular files.
KERNEL_FOLDERS = ("/proc", "/sys")


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a data file, or None when it can: "not found", "is a folder", "is a FIFO, not
    a regular file" (a device such as /dev/zero never ends, a FIFO blocks the read forever), or a file of the
    kernel's /proc or /sys (``/proc/self/mem`` passes for a regular file, yet reading it fails or returns the
    process's own memory)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "not found"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if stat.S_ISDIR(mode):
        return "is a folder"
    if not stat.S_ISREG(mode):
        return f"is {_kind(mode)}, not a regular file"
    real = os.path.realpath(path)
    for folder in KERNEL_FOLDERS:
        if real == folder or real.startswith(folder + os.sep):
            return f"is a file of the kernel's {folder}, not a data file"
    return None


def _limits(path: Path) -> tuple[int, int]:
    """NAME_MAX and PATH_MAX of the file system holding ``path`` (its nearest existing folder); 255 and 4096, as
    Linux has them, where the OS does not say."""
    folder = Path(os.path.abspath(path)).parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    limits = []
    for name, fallback in (("PC_NAME_MAX", 255), ("PC_PATH_MAX", 4096)):
        try:
            limits.append(os.pathconf(folder, name))
        except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or the OS does not know the name
            limits.append(fallback)
    return limits[0], limits[1]


def _check_length(path: Path, what: str) -> None:
    """Refuse a path the OS would refuse (ENAMETOOLONG) with a line that says which limit, not an OSError later."""
    name_max, path_max = _limits(path)
    full = len(os.fsencode(os.path.abspath(path)))
    if full >= path_max:
        raise OutputError(
            f"{what} {shorten_path(path)}: the path is {full} bytes long; this file system allows {path_max - 1}"
        )
    for part in Path(path).parts:
        if len(os.fsencode(part)) > name_max:
            raise OutputError(
                f"{what} {shorten_path(path)}: the name {shorten_path(part)} is {len(os.fsencode(part))} bytes "
                f"long; this file system allows {name_max} per name"
            )


def _under_a_folder(path: Path, what: str) -> None:
    """Refuse a new path below something that is not a folder (``notes.txt/out.json``): mkdir would fail later."""
    for parent in path.parents:
        try:
            mode = parent.stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OutputError(f"{what} {shorten_path(path)}: cannot be written: {exc.strerror}") from None
        if not stat.S_ISDIR(mode):
            raise OutputError(
                f"{what} {shorten_path(path)}: cannot be written: {parent} is {_kind(mode, 'a file')}, not a folder"
            )
        return


def _resolved(path: Path, what: str) -> tuple[Path, int | None]:
    """The real path (a symlink's final target) and its mode, None when it does not exist yet."""
    _check_length(path, what)
    target = Path(os.path.realpath(path))
    try:
        return target, target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # new, or below a file: _under_a_folder names which
        _under_a_folder(target, what)
        return target, None
    except OSError as exc:
        raise OutputError(f"{what} {shorten_path(path)}: cannot be written: {exc.strerror}") from None


def _shown(path: Path, target: Path) -> str:
    return shorten_path(f"{path} (-> {target})" if target != path.absolute() else str(path))


def _target(path: Path, what: str) -> Path:
    """Where ``path`` is really written: a symlink's final target; refused unless a regular file or absent."""
    target, mode = _resolved(path, what)
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputError(
            f"{what} {_shown(path, target)} is {_kind(mode)}; only a regular file (or a new path) is written"
        )
    return target


def _probe(folder: Path, path: Path, what: str) -> None:
    """Create ``folder`` if missing, then make and remove a file in it: permission bits do not tell (root may write
    anywhere by them, yet not in /proc or on a read-only mount), so writing is the only real test."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".speechperf-", suffix=".check"):
            pass
    except OSError as exc:
        raise OutputError(
            f"{what} {shorten_path(path)}: its folder {shorten_path(folder)} is not writable "
            f"({exc.strerror or type(exc).__name__})"
        ) from None


def check_output_path(path: str | Path, what: str) -> Path:
    """Refuse ``path`` now if it cannot be written later; ``what`` names it in errors (e.g. ``--csv``). Returns
    where it is really written (a symlink's target); its folder is created if missing."""
    target = _target(Path(path), what)
    _probe(target.parent, Path(path), what)
    return target


def check_output_folder(path: str | Path, what: str) -> Path:
    """Refuse a folder a command is to fill (``--out-dir``, ``--workdir``) now if it cannot be: something there that
    is not a folder, a name too long, a parent that is a file, a folder that cannot be written. Returns the folder
    (a symlink's target), created if missing."""
    path = Path(path)
    target, mode = _resolved(path, what)
    if mode is not None and not stat.S_ISDIR(mode):
        raise OutputError(
            f"{what} {_shown(path, target)} is {_kind(mode, 'a file')}; a folder (or a new path) is needed"
        )
    _probe(target, path, what)
    return target


def refuse_same_file(source: str | Path, output: str | Path, what: str) -> None:
    """Refuse writing ``output`` when it is the input ``source`` itself (the same file by any link or spelling):
    the command would replace what it reads."""
    try:
        same = os.path.samefile(source, output)
    except OSError:  # one of them does not exist (yet): not the same file
        return
    if same:
        raise OutputError(
            f"{what} {shorten_path(output)} is the input {shorten_path(source)} itself; write to another file"
        )


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
    target, mode = _resolved(Path(path), what)  # a symlink to a folder: the folder it names is replaced
    if mode is not None and not stat.S_ISDIR(mode):
        raise OutputError(f"{what} {_shown(Path(path), target)} is {_kind(mode, 'a file')}; a folder is written there")
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


#: The figure files matplotlib writes here; the format follows the suffix.
FIGURE_FORMATS = (".png", ".svg")


def check_figure_path(path: str | Path, what: str) -> Path:
    """A plot's path: a suffix in ``FIGURE_FORMATS``, then every output's checks (``check_output_path``)."""
    if Path(path).suffix.lower() not in FIGURE_FORMATS:
        raise OutputError(f"{what} {shorten_path(path)}: the file must end in {' or '.join(FIGURE_FORMATS)}")
    return check_output_path(path, what)


def save_figure(fig, path: str | Path, what: str) -> Path:
    """Write a matplotlib figure atomically to ``path`` in the format its suffix names, and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        with atomic_path(path, what) as tmp:
            fig.savefig(tmp, format=Path(path).suffix.lower().lstrip("."))
    finally:
        plt.close(fig)
    return Path(path)


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
