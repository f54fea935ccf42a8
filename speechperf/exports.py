"""The one set of exporters over a result document (``speechperf.results.Document``): ``-o`` JSON, ``--csv``,
``--markdown``, ``--html`` and the results store, the same for every command that measures.

The promises, kept here once for every command (docs/results.md):
- every output path is checked before any work (``Exports.check``): a path that cannot be written fails in a
  second, not after an hour of measuring;
- JSON, CSV and Markdown are rewritten atomically each time the command has new rows (``Exports.write``), so a
  crash or Ctrl-C leaves the last complete snapshot, marked ``complete: false``;
- Ctrl-C (exit 130) keeps every export of what was measured (``speechperf.lifecycle`` writes the last document
  again, marked incomplete);
- the HTML page and the store come last (``Exports.finish``): a store that cannot be written then costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import attrs

from speechperf import views
from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import check_output_path, write_text_atomic
from speechperf.results import Document
from speechperf.store.keep import Keep


@attrs.frozen
class Exports:
    """Where one run's document goes. Its CSV and Markdown are its kind's view (``speechperf.views``), so that
    ``speechperf show`` writes them again from the JSON alone."""

    json: Path | None = None
    csv: Path | None = None
    markdown: Path | None = None
    keep: Keep = Keep()

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
            write_text_atomic(self.csv, views.view_of(doc.kind).csv(doc), "--csv")
        if self.markdown is not None:
            write_text_atomic(self.markdown, views.view_of(doc.kind).markdown(doc), "--markdown")

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
