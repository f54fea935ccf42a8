"""Framework bindings, one package per framework, imported as ``speechperf.backends.<name>``.

Each package imports its own framework and the core's protocols; never another backend, never an adapter.
"""
