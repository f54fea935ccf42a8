"""The notes and warnings a command printed, kept for its result document: the console's lines are log records of
the ``speechperf`` logger (``speechperf.logs``), so one handler collects them for every command alike."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import attrs

from speechperf.logs import LOGGER_NAME

#: A record at INFO whose message starts so is a note; WARNING and above are warnings; the rest is progress.
NOTE_PREFIX = "note: "


@attrs.define
class Collected:
    notes: list[str] = attrs.Factory(list)
    warnings: list[str] = attrs.Factory(list)


class _Collector(logging.Handler):
    def __init__(self, into: Collected) -> None:
        super().__init__(level=logging.INFO)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format is no note; logging reports it elsewhere
            return
        if record.levelno >= logging.WARNING:  # a warning is one, whatever its text starts with
            self.into.warnings.append(message.removeprefix(NOTE_PREFIX))
        elif message.startswith(NOTE_PREFIX):
            self.into.notes.append(message[len(NOTE_PREFIX) :])


@contextlib.contextmanager
def collect() -> Iterator[Collected]:
    """Every note and warning logged inside the block (whatever the console's level: ``-q`` hides notes from the
    terminal, not from the document)."""
    into = Collected()
    handler = _Collector(into)
    logger = logging.getLogger(LOGGER_NAME)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)  # -q: the console handler still filters by its own level
    try:
        yield into
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
