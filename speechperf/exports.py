"""The one set of exporters over a result document (``speechperf.results.Document``): ``-o`` JSON, ``--csv``,
``--markdown``, ``--html`` and the results store, the same for every command that measures.

The promises, kept here once for every command (docs/results.md):
- every output path is checked before any work (``Exports.check``): a path that cannot be written fails in a
  second, not after an hour of measuring;
- JSON, CSV and Markdown are rewritten atomically each time the command has new rows (``Exports.write``), so a
  crash or Ctrl-C leaves the last complete snapshot, marked ``complete: false``;
- Ctrl-C (exit 130) keeps every export of what was measured (``Exports.interrupted``);
- the HTML page and the store come last (``Exports.finish``): a store that cannot be written then costs nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import attrs

from speechperf import views
from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import check_output_path, write_text_atomic
from speechperf.results import Document
from speechperf.store.keep import Keep


def to_csv(doc: Document, columns: Sequence[str] = ()) -> str:
    """The CSV of ``doc``: its kind's view (``speechperf.views``), or its rows in ``columns``."""
    return views.rows_csv(doc, columns) if columns else views.view_of(doc.kind).csv(doc)


def to_markdown(doc: Document, columns: Sequence[str] = ()) -> str:
    """The Markdown of ``doc``: its kind's view, or its rows in ``columns``."""
    return views.rows_markdown(doc, columns) if columns else views.view_of(doc.kind).markdown(doc)


@attrs.frozen
class Exports:
    """Where one run's document goes. Its CSV and Markdown are its kind's view (``speechperf.views``); ``columns``,
    ``csv_text`` and ``markdown_text`` are the older way a command passed its own (being folded into the views)."""

    json: Path | None = None
    csv: Path | None = None
    markdown: Path | None = None
    keep: Keep = Keep()
    columns: tuple[str, ...] = ()
    csv_text: Callable[[Document], str] | None = None
    markdown_text: Callable[[Document], str] | None = None

    def paths(self) -> list[tuple[str, Path]]:
        named = (("--output", self.json), ("--csv", self.csv), ("--markdown", self.markdown))
        return [(option, path) for option, path in named if path is not None]

    def check(self) -> Exports:
        """Refuse a path that cannot be written, and two options naming one file, before anything is measured."""
        seen: dict[str, str] = {}
        for option, path in self.paths():
            check_output_path(path, option)
            real = os.path.realpath(path)
            if real in seen:
                raise SpeechperfError(
                    f"{option} {shorten_path(path)}: the same file as {seen[real]}; give each export its own file"
                )
            seen[real] = option
        self.keep.check()
        return self

    def write(self, doc: Document) -> None:
        """JSON, CSV and Markdown of ``doc`` as it stands, each replaced atomically."""
        if self.json is not None:
            doc.write(self.json, "--output")
        if self.csv is not None:
            text = self.csv_text(doc) if self.csv_text else to_csv(doc, self.columns)
            write_text_atomic(self.csv, text, "--csv")
        if self.markdown is not None:
            text = self.markdown_text(doc) if self.markdown_text else to_markdown(doc, self.columns)
            write_text_atomic(self.markdown, text, "--markdown")

    def finish(
        self,
        doc: Document,
        exit_code: int | None,
        tables: Sequence[str] = (),
        images: Sequence[Path] = (),
        title: str | None = None,
    ) -> int | None:
        """The last write of the exports, then the HTML page and the store; returns the run's id in the store."""
        self.write(doc)
        return self.keep.finish(doc, exit_code, tables=tables, images=images, title=title)

    @contextlib.contextmanager
    def interrupted(self, current: Callable[[], Document | None]) -> Iterator[None]:
        """On Ctrl-C inside the block, write the exports of ``current()`` (what was measured, ``complete: false``),
        then let the interrupt go on (the CLI exits 130)."""
        try:
            yield
        except KeyboardInterrupt:
            doc = current()
            if doc is not None:
                doc.complete = False
                self.write(doc)
            raise
