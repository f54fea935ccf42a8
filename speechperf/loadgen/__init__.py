"""Serving scenarios through MLPerf's LoadGen (the ``mlperf_loadgen`` package, extra ``loadgen``).

``speechperf loadgen`` runs SingleStream, MultiStream, Server or Offline on any backend: LoadGen generates the load
and measures latency; the system under test runs the same stages ``bench`` builds (docs/loadgen.md).
"""
