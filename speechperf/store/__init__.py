"""What a finished run is kept as beyond its -o exports: the results store (SQLite, ``speechperf history``) and
the self-contained HTML report (``--html``). docs/history.md describes both; the store's schema is in ``db``."""
