"""FLOPs of one call (docs/backends.md, "FLOPs"): torch's own counter over the program's aten ops.

The FLOPs meter calls ``count_flops(session, feeds)`` in the process that runs the session, before the session's
call on those feeds, once per set of input shapes (it caches the count), in a pass that is not timed: running the
program here is allowed. ``torch.utils.flop_counter`` counts by the shared rule for matmul (``2*M*N*K``) and
convolution; an op it has no formula for (an LSTM) is listed in ``uncounted``.
"""

from __future__ import annotations

from speechperf.meters.flops import FlopCount

_KINDS = {"mm": "matmul", "addmm": "matmul", "bmm": "matmul", "baddbmm": "matmul", "convolution": "conv"}


def count_flops(session, feeds) -> FlopCount:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        session.module(*session.args(feeds))
    by_kind: dict[str, int] = {}
    counted = set()
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        name = str(op).split(".")[-1]  # aten.addmm -> addmm
        counted.add(name)
        kind = _KINDS.get(name, "other")
        by_kind[kind] = by_kind.get(kind, 0) + int(flops)
    ops = {str(n.target).split(".")[1] for n in session.program.graph.nodes if n.op == "call_function"}
    heavy = {"lstm", "gru", "rnn_tanh", "rnn_relu", "_scaled_dot_product_flash_attention"}
    return FlopCount(sum(by_kind.values()), "analytic", uncounted=tuple(ops & heavy - counted), by_kind=by_kind)
