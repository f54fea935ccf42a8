"""Third-party output to the log, not the console: what frameworks print while tune works in its own process.

Importing torchao logs "Failed to load ... _C_mxfp8" and "Detected no triton", paddle's profiler prints ``USDT``
lines from C++, an ONNX export logs its constant folding: none of it is the tune's, and on the console it buried
the lines that are. Inside ``third_party_to_log()`` file descriptors 1 and 2 go to a temporary file (so output
from C and C++ is caught as well as Python's), speechperf's own lines still reach the console
(speechperf.logs.console_to), and what was caught is logged line by line at DEBUG afterwards: ``-v`` shows it.
The children tune launches write theirs into their run folders (speechperf.launch.child) already.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import TextIO

from speechperf import logs

log = logging.getLogger(__name__)


@contextlib.contextmanager
def third_party_to_log(what: str = "framework output") -> Iterator[None]:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = {fd: os.dup(fd) for fd in (1, 2)}
    except OSError:  # no real descriptors (an embedding host): nothing to keep apart
        yield
        return
    with tempfile.TemporaryFile() as caught:
        # the console: the real stderr kept aside, or a stream that is no descriptor (click's test runner's)
        console: TextIO = os.fdopen(os.dup(saved[2]), "w", buffering=1, encoding="utf-8", errors="replace")
        if not _on_fd2(sys.stderr):
            console.close()
            console = sys.stderr
        for fd in saved:
            os.dup2(caught.fileno(), fd)
        try:
            with logs.console_to(console):
                yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            for fd, dup in saved.items():
                os.dup2(dup, fd)
                os.close(dup)
            if console is not sys.stderr:
                console.close()
            caught.seek(0)
            text = caught.read().decode("utf-8", errors="replace")
            for line in text.splitlines():
                if line.strip():
                    log.debug("%s: %s", what, line.rstrip())


def _on_fd2(stream) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False
