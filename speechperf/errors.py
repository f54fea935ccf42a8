"""Errors a user can fix. The CLI prints their message as one line, without a traceback, and exits with 2."""


class SpeechperfError(Exception):
    """Bad input: the message names the thing, the value and what is allowed."""


class UnknownBackendError(SpeechperfError):
    pass


class BackendUnavailableError(SpeechperfError):
    pass


class ModelFileError(SpeechperfError):
    """A model file that is missing, or of a format the backend cannot load."""


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
