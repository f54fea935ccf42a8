"""The one result document of every measuring command (docs/results.md): its envelope and reader (``document``),
the older versions it still reads (``upgrade``), one name and unit per figure (``figures``), the machine and load
it records (``environment``) and the notes it keeps (``notes``). The exporters over it: ``speechperf.exports``."""

from speechperf.results.document import KINDS, Document, loads, read
from speechperf.results.version import SCHEMA_VERSION, DocumentError

__all__ = ["KINDS", "SCHEMA_VERSION", "Document", "DocumentError", "loads", "read"]
