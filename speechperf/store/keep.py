"""Where a finished run of any kind (bench, compare, optimize, loadgen, serving, ...) goes besides its -o exports:
appended to the results store (on by default, to ``<cache>/results.sqlite``; ``--store PATH`` elsewhere,
``--no-store`` not at all) and, with ``--html FILE``, written as one HTML page. Both are checked before anything is
measured; both are written after the -o, --csv and --markdown exports, so that a store that fails then costs none of
what was measured."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import attrs

from speechperf.cache import cache_dir
from speechperf.results import Document
from speechperf.store import db, html, record

log = logging.getLogger(__name__)
STORE_NAME = "results.sqlite"


def default_store() -> Path:
    return cache_dir() / STORE_NAME


@attrs.frozen
class Keep:
    store: Path | None = None  #: None: not stored (--no-store)
    html: Path | None = None

    @classmethod
    def of(cls, store: Path | None, no_store: bool, html_path: Path | None) -> Keep:
        return cls(None if no_store else (store or default_store()), html_path)

    def check(self) -> Keep:
        """Refuse a bad --store or --html now, before anything is measured; returns self."""
        if self.store is not None:
            db.check_store(self.store)
        if self.html is not None:
            html.check_html_path(self.html)
        return self

    def finish(
        self,
        doc: Document,
        exit_code: int | None,
        tables: Sequence[str] = (),
        images: Sequence[Path] = (),
        title: str | None = None,
    ) -> int | None:
        """Write the HTML page, then append the run to the store; returns the run's id in the store (None when
        not stored). Commands call it through ``speechperf.exports.Exports.finish``."""
        if self.html is not None:
            page = html.render_document(doc, tables, images, title or f"speechperf {doc.kind}")
            html.write_html(self.html, page)
            log.info("%s: HTML report %s", doc.kind, self.html)
        if self.store is None:
            return None
        run_id = db.append(self.store, record.record(doc, exit_code), record.metric_rows(doc))
        log.info("%s: stored as run %d in %s (speechperf history)", doc.kind, run_id, self.store)
        return run_id
