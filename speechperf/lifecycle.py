"""One command lifecycle, the same for every command that writes a result document (docs/architecture.md,
"The command lifecycle"):

1. check every output (``Exports.check``) before any work: a bad path costs a second, not a run;
2. collect the notes and warnings the command logs into its document (``speechperf.results.notes``);
3. run, rewriting the exports atomically each time the command has new rows (``Lifecycle.write``);
4. on Ctrl-C: the last document written again, marked ``complete: false``, then exit 130 (``Interrupted``);
5. finish: the console view of the document, the exports, the plots of ``--html`` drawn in a temporary folder, the
   page and the store, all from the document through its kind's view (``speechperf.views``), so that
   ``speechperf show`` gives the same again from the file.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from speechperf import tables, views
from speechperf.errors import Interrupted
from speechperf.exports import Exports
from speechperf.results import Document, notes


class Lifecycle:
    """``with lifecycle(exports) as run: ... run.write(doc) ... return run.finish(doc, code)``."""

    def __init__(self, exports: Exports, said: notes.Collected, out: IO[str], wide: bool) -> None:
        self.exports = exports
        self.said = said
        self.out = out
        self.wide = wide
        self.doc: Document | None = None
        #: what Ctrl-C says besides the exports that keep what was measured (compare --scenario: LoadGen's logs)
        self.interrupted_notes: list[str] = []

    def write(self, doc: Document) -> None:
        """The document as it stands, with what was said so far, to every export; kept for Ctrl-C. The notes and
        warnings are what was said, then the document's own ones not said (lines a view prints, such as loadgen's
        under its table), so that writing one document again changes nothing."""
        doc.notes = _joined(self.said.notes, doc.notes)
        doc.warnings = _joined(self.said.warnings, doc.warnings)
        self.doc = doc
        self.exports.write(doc)

    def show(self, doc: Document) -> None:
        """The console view of ``doc`` on ``out``."""
        how = views.Shown(width=tables.terminal_width(self.out), wide=self.wide)
        self.out.write(views.view_of(doc.kind).console(doc, how))

    def finish(self, doc: Document, code: int, show: bool = True) -> int:
        """The finished document: shown, written, drawn, kept; returns ``code``."""
        doc.complete = True
        if show:
            self.show(doc)
        self.write(doc)
        keep(self.exports, doc, code)
        return code


def _joined(said: list[str], own: list[str]) -> list[str]:
    return [*said, *(line for line in own if line not in said)]


def keep(exports: Exports, doc: Document, code: int | None) -> int | None:
    """The ``--html`` page (its plots drawn in a temporary folder) and the store, from the document's view."""
    view = views.view_of(doc.kind)
    with tempfile.TemporaryDirectory(prefix=f"speechperf-{doc.kind}-") as folder:
        images = view.plots(doc, Path(folder)) if view.plots is not None and exports.keep.html is not None else []
        return exports.finish(doc, code, tables=view.html_tables(doc), images=images, title=view.title(doc))


@contextlib.contextmanager
def lifecycle(exports: Exports, out: IO[str] | None = None, wide: bool = False) -> Iterator[Lifecycle]:
    exports = exports.check()
    with notes.collect() as said:
        run = Lifecycle(exports, said, out or sys.stdout, wide)
        try:
            yield run
        except KeyboardInterrupt as exc:
            if run.doc is not None:
                run.doc.complete = False
                run.write(run.doc)
            if isinstance(exc, Interrupted):
                raise
            # Nothing written yet (interrupted while loading): no file holds a measurement to point to.
            written = [str(path) for _, path in exports.paths()] if run.doc is not None else []
            kept = f"what was measured is in {', '.join(written)}" if written else ""
            raise Interrupted("; ".join(p for p in (kept, *run.interrupted_notes) if p)) from None


def load_result(result: str, store: Path | None = None) -> Document:
    """``result``: a document's path, or a stored run's id (all digits, and no such file)."""
    from speechperf.results import document
    from speechperf.store import history
    from speechperf.store.keep import default_store

    if result.isdigit() and not Path(result).exists():
        return history.document(store or default_store(), int(result))
    return document.read(result)


def show_again(result: str, exports: Exports, store: Path | None = None, wide: bool = False, out=None) -> int:
    """``speechperf show``: the document's console view and its exports, as the run that wrote it gave them; the
    document's own ``complete`` is kept (an interrupted run shows as one)."""
    doc = load_result(result, store)
    exports = exports.check()
    out = out or sys.stdout
    out.write(views.view_of(doc.kind).console(doc, views.Shown(width=tables.terminal_width(out), wide=wide)))
    exports.write(doc)
    keep(exports, doc, None)
    return 0
