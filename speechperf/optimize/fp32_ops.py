"""Which ops of a quantized graph stayed fp32, and their share of its time, from the backend's own profiler.

A quantization method converts only the ops it has int8 kernels for (onnxruntime's dynamic method: MatMul, Gemm,
LSTM; not GRU), and the ones it leaves can hold most of the time. After quantizing, the int8 graph runs the
held-out sample's feeds under the backend's step profiler (speechperf.profiler; the same op table as
``speechperf profile``), and each row of the op table is called int8 when its name is one of an int8 kernel
(``Integer``, ``Quant``, ``QLinear``, ``int8`` in it: MatMulInteger, DynamicQuantizeLinear, QLinearConv,
quantized::linear_dynamic, ...), fp32 otherwise. Shares are of the summed op time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

INT8_NAME = re.compile(r"integer|quant|qlinear|int8", re.IGNORECASE)
#: Rows below this share are summed into one "other" entry.
SHOWN_SHARE = 0.01


@attrs.frozen
class OpShares:
    """fp32 ops (name, share of the op time, calls), largest first; the int8 ops' summed share."""

    fp32: tuple[tuple[str, float, int], ...]
    int8_share: float

    def text(self) -> str:
        shown = [f"{name} {share:.0%}" for name, share, _ in self.fp32 if share >= SHOWN_SHARE]
        rest = sum(share for _, share, _ in self.fp32 if share < SHOWN_SHARE)
        if rest:
            shown.append(f"other fp32 {rest:.0%}")
        return f"not int8: {', '.join(shown) or 'none'}; int8 ops {self.int8_share:.0%}"

    def plain(self) -> dict:
        return {
            "fp32_ops": [{"op": n, "share": round(s, 4), "calls": c} for n, s, c in self.fp32],
            "int8_share": round(self.int8_share, 4),
        }


def shares(ops) -> OpShares:
    """From a profiler's op table (``OpStat`` rows)."""
    total = sum(op.total_ns for op in ops) or 1
    fp32 = sorted(
        ((op.name, op.total_ns / total, op.calls) for op in ops if not INT8_NAME.search(op.name)),
        key=lambda row: -row[1],
    )
    int8 = sum(op.total_ns for op in ops if INT8_NAME.search(op.name)) / total
    return OpShares(tuple(fp32), int8)


def profile_op_shares(backend, sessions: Mapping[str, object], calls: Sequence[tuple[str, dict]], folder: Path):
    """Run ``calls`` ((session name, feeds), one step each) under the backend's step profiler; their op shares."""
    steps = len(calls)
    options = f"batch_range=[1,{steps + 1}]; profile_path={Path(folder) / 'fp32_ops'}"
    prof = backend.step_profiler(options)
    prof.echo = False
    with prof:
        attached = {name: prof.attach(s) for name, s in sessions.items()}
        k = 0
        while not prof.finished:
            name, feeds = calls[k % steps]
            attached[name](feeds)
            prof.step(num_samples=1)
            k += 1
    return shares(prof.summary.ops)
