"""Running cells in fresh child processes: what compare, optimize, tune and ``bench --runs`` share.

Every measured run is a fresh ``speechperf bench`` (or ``loadgen``) process, so no run inherits another's imports,
allocator state or thread pools (docs/architecture.md, "Data flow of compare"). One concept per module:

- ``cell``: ``Cell``, one thing measured and the command line of its children;
- ``lists``: the comma lists a launch is planned from (``--backends``) and ``PlanError``;
- ``result``: ``RunResult``, how one child run ended;
- ``child``: one child run: its command line, the process, and how its end is classified;
- ``executors``: where children run: ``local`` processes, ``ray`` tasks, or ``inprocess`` for debugging;
- ``launcher``: ``run_cells``, the cells' runs interleaved on an executor, recorded as each finishes;
- ``bench_runs``: ``speechperf bench --runs N``, one cell's N runs kept as one bench document.

Imports no framework (the children do) and no command's internals: the commands import it.
"""
