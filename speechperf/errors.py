"""Errors a user can fix. The CLI prints their message as one line, without a traceback, and exits with 2."""

import re
import reprlib


class SpeechperfError(Exception):
    """Bad input: the message names the thing, the value and what is allowed."""


class UnknownBackendError(SpeechperfError):
    pass


class BackendUnavailableError(SpeechperfError):
    pass


class ModelFileError(SpeechperfError):
    """A model file that is missing, or of a format the backend cannot load."""


class DeclarationError(ModelFileError):
    """A model file that loads, but does not match what is declared for it (how many outputs it returns)."""


class FeedError(SpeechperfError):
    """A session was fed an input with the wrong name, dtype, rank or size."""


class DeviceError(SpeechperfError):
    pass


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with a note on what was kept (e.g. which files hold the measurements so far). The CLI prints
    "interrupted" once, with the note, and exits with 130."""


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message: frameworks often add pages of C++ context."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


#: How much of a framework's full error text a result keeps (the JSON's ``detail``): enough for its tracebacks'
#: decisive frames, bounded so that a page of C++ frames per failed sample does not bloat the file.
DETAIL_LIMIT = 4000

# A line that states an error: ``RuntimeError: ...``, ``InvalidArgumentError: ...`` (Python and TorchScript),
# ``(InvalidArgument) ...`` (paddle's C++ error codes).
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)\s*:|\((?:[A-Z][A-Za-z]+)\)\s)")
_HINT = re.compile(r"^\[Hint: .*\]")
_AT_SOURCE = re.compile(r"\s*\(at /[^)]*\)\s*$")


def decisive_line(exc: BaseException | str) -> str:
    """The one line of an error message that says what went wrong.

    Frameworks wrap the cause in pages of context, and the cause is not on the first line: the TorchScript
    interpreter starts with "The following operation failed in the TorchScript interpreter." and ends, after two
    tracebacks, with ``RuntimeError: Given groups=1, weight of size [512, 80, 7], expected input ... to have 80
    channels``; a paddle predictor starts with "In user code:" and states ``InvalidArgumentError: ...`` then a
    ``[Hint: ...]``; paddle's C++ summary follows "Error Message Summary:". So: the last line that states an error,
    with paddle's hint after it (less its source location); else onnxruntime's lines joined (its
    ``INVALID_ARGUMENT`` puts the axis and sizes on the next line); else the first line.
    """
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__ if isinstance(exc, BaseException) else ""
    stated = [i for i, line in enumerate(lines) if _ERROR_LINE.match(line)]
    if stated:
        last = stated[-1]
        hints = [line for line in lines[last + 1 : last + 2] if _HINT.match(line)]
        return " ".join(_AT_SOURCE.sub("", line) for line in [lines[last], *hints])
    if lines[0].startswith("[ONNXRuntimeError]"):
        return " ".join(lines)
    return lines[0]


def error_text(exc: BaseException) -> str:
    """``Type: decisive line`` of an exception, without repeating the type when the line already names one."""
    line = decisive_line(exc)
    return line if _ERROR_LINE.match(line) and not line.startswith("(") else f"{type(exc).__name__}: {line}"


def error_detail(exc: BaseException, limit: int = DETAIL_LIMIT) -> str:
    """The full message of an exception, cut to ``limit`` characters (its end kept: that is where causes are)."""
    text = f"{type(exc).__name__}: {str(exc).strip()}"
    if len(text) <= limit:
        return text
    return f"{text[: limit // 4]}\n... [{len(text) - limit} characters cut] ...\n{text[-(limit - limit // 4) :]}"


#: The most characters of a user's value an error line shows: a megabyte-long string or a huge nested list in a
#: config must not become a megabyte-long line.
SHOWN_LIMIT = 200

_SHORT_REPR = reprlib.Repr()  # attributes, not keywords: Python 3.11's Repr takes none
_SHORT_REPR.maxlevel = 4
_SHORT_REPR.maxdict = _SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = _SHORT_REPR.maxset = 8
_SHORT_REPR.maxstring = SHOWN_LIMIT
_SHORT_REPR.maxother = 80


def shorten(value: object, limit: int = SHOWN_LIMIT) -> str:
    """``repr(value)`` for an error line, at most ``limit`` characters. ``reprlib`` visits a bounded number of items
    per level and levels, so a value built from YAML aliases (billions of items sharing a few lists) is shown in
    microseconds instead of hanging; a long result keeps its start and end, with the number of characters cut."""
    try:
        text = _SHORT_REPR.repr(value)
    except ValueError:  # an int past Python's 4300-digit conversion limit
        text = f"<{type(value).__name__} too large to show>"
    return cut_text(text, limit)


def shorten_path(path: object, limit: int = SHOWN_LIMIT) -> str:
    """A path (or any text) for an error line, at most ``limit`` characters: a 5,000-character name is cut."""
    return cut_text(str(path), limit)


#: The longest error line the CLI prints: the last guard, after every message has cut the values it shows.
LINE_LIMIT = 2000


def cut_text(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and end with the number of characters cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 8)
    return f"{text[: keep * 2 // 3]}...[{len(text) - keep} chars cut]...{text[-(keep - keep * 2 // 3) :]}"
