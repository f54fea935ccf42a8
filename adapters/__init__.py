"""Framework-free glue between speech tasks and backends, imported as ``speechperf.adapters.<name>``.

Adapters import the core's protocols and numpy; never a framework, never a backend module.
"""
