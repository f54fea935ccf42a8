"""The envelope's schema version, and the error a file that is no readable result document raises."""

from __future__ import annotations

from speechperf.errors import SpeechperfError

#: Version 4: a ``diff`` document's figures in one unit, named (``figure``, ``figure_unit``: times in ms where version 3
#: kept a timing kind's in seconds); version 3: every figure a fraction where version 2 kept a percent
#: (``figures.V2_PERCENT``); version 2: the envelope (``speechperf.results.document``); version 1: each command's own
#: JSON.
SCHEMA_VERSION = 4


class DocumentError(SpeechperfError):
    """A file that is not a speechperf result document this version can read; the message names the file."""
