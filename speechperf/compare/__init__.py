"""``speechperf compare``: one config on several backends (and thread counts, presets, ...), each run in its own
fresh process, interleaved, with statistics over the runs and a parity check of the outputs.

- ``plan``: the cells to measure (backend x threads x a parameter sweep) and the bench command line of each;
- ``launch``: runs the cells' children, interleaved, on an executor, and records each as it finishes;
- ``child``: one child run: its command line, the process, and why it failed;
- ``executors``: where children run: ``local`` processes, ``ray`` tasks, or ``inprocess`` for debugging;
- ``summary``: per-cell figures and the ranking from the children's bench JSON;
- ``parity``: how far each cell's outputs are from the reference cell's;
- ``exports``: JSON, CSV, Markdown and the plot.

Imports no framework: the children do.
"""
