"""``speechperf compare``: one config on several backends (and thread counts, presets, ...), each run in its own
fresh process, interleaved, with statistics over the runs and a parity check of the outputs.

- ``plan``: the cells to measure (backend x threads x a parameter sweep); they run through ``speechperf.launch``
  (the cells, the children, the executors, the launcher), which optimize, tune and ``bench --runs`` use too;
- ``summary``: per-cell figures and the ranking from the children's bench JSON;
- ``parity``: how far each cell's outputs are from the reference cell's;
- ``exports``: JSON, CSV, Markdown and the plot.

Imports no framework: the children do.
"""
