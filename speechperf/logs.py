"""Where speechperf's notes, warnings and progress lines go.

Library code never prints: each module logs through ``logging.getLogger(__name__)``, a child of the ``speechperf``
logger (backends and adapters install as ``speechperf.backends.*`` and ``speechperf.adapters.*``). Only an entry
point decides where the records go and how many: the CLI calls ``configure`` (stderr, the message alone, INFO and
above; ``-v`` adds DEBUG, ``-q`` keeps WARNING and above), and so does a Ray worker that runs a compare child.

Used as a library without ``configure``, warnings still reach stderr through Python's last-resort handler; call
``speechperf.logs.configure()`` (or ``logging.basicConfig(level=logging.INFO)``) to see the notes too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import click

LOGGER_NAME = "speechperf"

_handler: logging.Handler | None = None
#: Where the handler writes while stderr's file descriptor is captured (speechperf.tune.quiet); None: sys.stderr.
_console = None


class ClickStderrHandler(logging.Handler):
    """One line per record on the current stderr through ``click.echo``: click's test runner and a redirected
    stderr see it, because the stream is looked up at each record, not when the handler is made."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if _console is not None:
                click.echo(self.format(record), file=_console)
            else:
                click.echo(self.format(record), err=True)
        except Exception:
            self.handleError(record)


def level_of(verbose: int = 0, quiet: bool = False) -> int:
    """The CLI's -v (count) and -q flags as a logging level."""
    if quiet:
        return logging.WARNING
    return logging.DEBUG if verbose > 0 else logging.INFO


def configure(level: int = logging.INFO) -> logging.Logger:
    """Send the ``speechperf`` records at ``level`` and above to stderr, each as its message alone (the notes read
    as they always did). Calling it again replaces the handler instead of adding a second one."""
    global _handler
    logger = logging.getLogger(LOGGER_NAME)
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = ClickStderrHandler()
    _handler.setFormatter(logging.Formatter("%(message)s"))
    # The handler filters too: a result document collects the notes (speechperf.results.notes) by lowering the
    # logger's level, which must not bring them to a -q console.
    _handler.setLevel(level)
    logger.addHandler(_handler)
    logger.setLevel(level)
    logger.propagate = False  # a root handler (Ray's, an application's) must not print every line a second time
    return logger


@contextlib.contextmanager
def console_to(stream) -> Iterator[None]:
    """speechperf's own lines to ``stream`` inside the block (the console, while file descriptor 2 is captured)."""
    global _console
    was, _console = _console, stream
    try:
        yield
    finally:
        _console = was


@contextlib.contextmanager
def silenced(name: str) -> Iterator[None]:
    """Nothing from the logger ``name`` (a framework's) inside the block: for a call that logs a whole traceback and
    then raises, where speechperf's one line says what went wrong (torch.export.load on a file that is no archive)."""
    logger = logging.getLogger(name)
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was
