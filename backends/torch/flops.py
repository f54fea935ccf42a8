"""Analytic FLOPs of one torch session call (see ``speechperf.meters.flops`` for the convention).

``torch.utils.flop_counter.FlopCounterMode`` counts matmuls and convolutions, but 0 for what runs as one fused
kernel on the CPU: ``aten.lstm`` (mkldnn), the ``_native_multi_head_attention`` / ``_transformer_encoder_layer_fwd``
fast paths and ``scaled_dot_product_attention``. Those are added here through its ``custom_mapping``, so the mode
counts them instead of decomposing them (no double counting). The ops it executes without a formula are collected
as ``uncounted``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from speechperf.meters.flops import FlopCount

aten = torch.ops.aten

# Ops that do no floating point arithmetic: never listed as uncounted.
_NO_ARITHMETIC = {
    "view",
    "_unsafe_view",
    "reshape",
    "permute",
    "transpose",
    "t",
    "expand",
    "unsqueeze",
    "squeeze",
    "select",
    "slice",
    "clone",
    "contiguous",
    "detach",
    "alias",
    "cat",
    "stack",
    "split",
    "split_with_sizes",
    "unbind",
    "zeros",
    "empty",
    "full",
    "ones",
    "new_zeros",
    "new_empty",
    "copy_",
    "_to_copy",
    "lift_fresh",
    "index_select",
    "embedding",
    "arange",
    "as_strided",
    "zero_",
    "fill_",
    "masked_fill",
    "index",
    "gather",
    "flatten",
    "constant_pad_nd",
    "narrow",
    "repeat",
    "_reshape_alias",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "eq",
    "ne",
    "lt",
    "gt",
    "le",
    "ge",
    "logical_not",
    "logical_and",
    "argmax",
    "topk",
    "scalar_tensor",
    "item",
    "_local_scalar_dense",
}


def _rnn_flops(input_shape, *args, out_val=None, **kwargs) -> int:
    """2 * steps * batch * (elements of every weight matrix): each weight is applied once per step and sample.

    Works for both overloads: ``input`` [T, B, I] / [B, T, I] (steps * batch either way), or unbatched / packed
    data [steps, I]. The weights are the 2-D shapes in the ``params`` list (``hx`` holds 3-D shapes only).
    """
    steps = input_shape[0] * input_shape[1] if len(input_shape) == 3 else input_shape[0]
    weights = sum(math.prod(p) for arg in args if isinstance(arg, list) for p in arg if len(p) == 2)
    return 2 * steps * weights


def _sdpa_flops(q, k, v, *args, out_val=None, **kwargs) -> int:
    """Q K^T and A V: 2*L*S*E + 2*L*S*Ev per head and batch element."""
    batch = math.prod(q[:-2])
    length, source, e, ev = q[-2], k[-2], q[-1], v[-1]
    return 2 * batch * length * source * (e + ev)


def _mha_flops(
    query, key, value, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, *args, out_val=None, **kwargs
) -> int:
    """In-projections, attention and out-projection of ``_native_multi_head_attention`` (batch-first)."""
    batch, length, e = query[0], query[-2], query[-1]
    source = key[-2]
    projections = 2 * batch * (length + 2 * source) * e * e + 2 * batch * length * e * e
    return projections + 2 * batch * length * source * 2 * e


def _encoder_layer_flops(
    src,
    embed_dim,
    num_heads,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    use_gelu,
    norm_first,
    eps,
    norm_weight_1,
    norm_bias_1,
    norm_weight_2,
    norm_bias_2,
    ffn_weight_1,
    ffn_bias_1,
    ffn_weight_2,
    *args,
    out_val=None,
    **kwargs,
) -> int:
    tokens = math.prod(src[:-1])
    ffn = 2 * tokens * (math.prod(ffn_weight_1) + math.prod(ffn_weight_2))
    return _mha_flops(src, src, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight) + ffn


_FORMULAS = {
    aten.lstm: _rnn_flops,
    aten.gru: _rnn_flops,
    aten.rnn_tanh: _rnn_flops,
    aten.rnn_relu: _rnn_flops,
    aten.scaled_dot_product_attention: _sdpa_flops,
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_flops,
    aten._native_multi_head_attention: _mha_flops,
    aten._transformer_encoder_layer_fwd: _encoder_layer_flops,
}
# FlopCounterMode decomposes an overload it has no formula for before counting, and LSTM decomposes into
# mkldnn_rnn_layer, which it cannot count: every overload is registered so these ops are counted whole.
EXTRA = dict(_FORMULAS)
for _packet, _formula in _FORMULAS.items():
    for _overload in _packet.overloads():
        EXTRA[getattr(_packet, _overload)] = _formula

KINDS = {
    "mm": "matmul",
    "addmm": "matmul",
    "bmm": "matmul",
    "baddbmm": "matmul",
    "matmul": "matmul",
    "convolution": "conv",
    "_convolution": "conv",
    "lstm": "rnn",
    "gru": "rnn",
    "rnn_tanh": "rnn",
    "rnn_relu": "rnn",
}


class _Counter(FlopCounterMode):
    """FlopCounterMode that also remembers the ops it ran without a formula."""

    def __init__(self):
        super().__init__(display=False, custom_mapping=EXTRA)
        self.uncounted: set[str] = set()

    def _count_flops(self, func_packet, out, args, kwargs):
        if func_packet not in self.flop_registry:
            name = func_packet.__name__
            if name.rstrip("_") not in _NO_ARITHMETIC and name not in _NO_ARITHMETIC:
                self.uncounted.add(f"aten.{name}")
        return super()._count_flops(func_packet, out, args, kwargs)


def count_flops(session, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    """FlopCount of one call of a TorchSession (or any callable taking a feeds dict) on ``feeds``."""
    return _counted(lambda: session(feeds))


def module_flops(module: torch.nn.Module, *args: torch.Tensor) -> FlopCount:
    """FlopCount of ``module(*args)`` under inference mode (for models not wrapped in a session)."""

    def call():
        with torch.inference_mode():
            module(*args)

    return _counted(call)


def _counted(call) -> FlopCount:
    counter = _Counter()
    with counter:
        call()
    by_kind: dict[str, int] = {}
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        name = getattr(op, "__name__", str(op))
        kind = KINDS.get(name, "attention" if "attention" in name or "transformer" in name else "other")
        by_kind[kind] = by_kind.get(kind, 0) + int(flops)
    return FlopCount(int(counter.get_total_flops()), "analytic", tuple(counter.uncounted), by_kind=by_kind)
