"""``speechperf tune``: the fastest way to run a speech pipeline on this machine within a quality budget, searched
across frameworks, execution variants, precisions and threads, stage by stage (docs/tune.md)."""
