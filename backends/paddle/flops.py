"""Analytic FLOPs of one paddle session call, by walking the PIR program (see ``speechperf.meters.flops``).

``paddle.flops`` counts MACs and skips LSTM; this counter walks the program's ops instead, in FLOPs, so LSTM
(``pd_op.rnn``), attention (its ``pd_op.matmul`` ops) and functional code are counted:

an eager ``nn.Layer`` session's ``forward`` is traced with ``paddle.jit.to_static`` at the feeds' exact shapes and
dtypes (the layer itself stays in eager mode), so every op has a static shape. Inference model files (predictor,
``paddle.jit.load``) are refused with a one-line reason: their programs keep -1 for batch and time.

Counts are cached per session and input shapes.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Mapping

import numpy as np

from speechperf.backends.paddle.framework import import_paddle
from speechperf.errors import SpeechperfError
from speechperf.meters.flops import FlopCount

paddle = import_paddle()

MATMULS = {"pd_op.matmul", "pd_op.bmm", "pd_op.mm"}
CONVS = {"pd_op.conv1d", "pd_op.conv2d", "pd_op.conv3d", "pd_op.depthwise_conv2d"}
CONV_TRANSPOSES = {
    "pd_op.conv2d_transpose",
    "pd_op.conv3d_transpose",
    "pd_op.depthwise_conv2d_transpose",
    "pd_op.conv1d_transpose",
}
RNNS = {"pd_op.rnn"}
# Ops with no floating point work: never listed as uncounted.
NO_ARITHMETIC = {
    "data",
    "full",
    "full_int_array",
    "full_like",
    "reshape",
    "transpose",
    "squeeze",
    "unsqueeze",
    "assign",
    "slice",
    "strided_slice",
    "concat",
    "split",
    "split_with_num",
    "shape",
    "shape64",
    "cast",
    "gather",
    "gather_nd",
    "expand",
    "tile",
    "stack",
    "unstack",
    "flatten",
    "fetch",
    "feed",
    "embedding",
    "index_select",
    "arange",
    "zeros",
    "ones",
    "empty",
    "pad",
    "assign_value_",
    "assign_value",
    "equal",
    "not_equal",
    "less_than",
    "greater_than",
    "logical_not",
    "argmax",
    "topk",
    "where",
    "dropout",
    "share_data_",
    "share_data",
    "memcpy_h2d",
    "memcpy_d2h",
    "set_value_",
    "set_value_with_tensor_",
    "squeeze_",
    "unsqueeze_",
    "reshape_",
    "transpose_",
}

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def count_flops(session, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    """FlopCount of one call of a paddle LayerSession / PredictorSession on ``feeds``."""
    arrays = [np.asarray(feeds[t.name]) for t in session.inputs]
    key = tuple((a.shape, str(a.dtype)) for a in arrays)
    per_session = _cache.setdefault(session, {})
    if key not in per_session:
        per_session[key] = _count(session, arrays)
    return per_session[key]


def _count(session, arrays: list[np.ndarray]) -> FlopCount:
    layer = getattr(session, "layer", None)
    if layer is None or type(layer).__name__ == "TranslatedLayer":
        # An inference program keeps -1 for batch and time, and paddle offers no way to re-infer its shapes at given
        # feeds (fetching intermediate values from a loaded inference program fails in paddle 3.3).
        raise SpeechperfError(
            f"cannot count paddle FLOPs of {type(session).__name__}: a paddle inference model file is not counted "
            "(its program has dynamic shapes); load the same model from its layer factory (format 'layer'), or count "
            "its ONNX export on backend 'onnxruntime'"
        )
    return layer_flops(layer, arrays)


def layer_flops(layer, arrays: list[np.ndarray]) -> FlopCount:
    """FLOPs of ``layer(*arrays)``: trace its forward at these exact shapes and walk the program."""
    specs = [paddle.static.InputSpec(list(a.shape), str(a.dtype), name=f"x{i}") for i, a in enumerate(arrays)]
    static_forward = paddle.jit.to_static(layer.forward, full_graph=True)
    with warnings.catch_warnings():
        # Tracing ops such as ones_like asks for a place the PIR graph does not have; paddle warns every time.
        warnings.filterwarnings("ignore", message="Tensor do not have 'place'")
        program, _ = static_forward.get_concrete_program(*specs)
    return walk(program.main_program)


def walk(program) -> FlopCount:
    """Sum the FLOPs of the counted ops of a PIR program whose shapes are all static."""
    total, uncounted = 0, set()
    kinds: dict[str, int] = {}

    def shape(value) -> tuple[int, ...]:
        dims = tuple(value.shape)
        if any(d < 0 for d in dims):
            raise SpeechperfError(f"cannot count paddle FLOPs: a value's shape {list(dims)} is not known")
        return dims

    for op in program.global_block().ops:
        name = op.name()
        short = name.split(".", 1)[-1]
        if name in MATMULS:
            x, out = op.operands_source()[0], op.results()[0]
            xs = shape(x)
            k = xs[0] if len(xs) == 1 else (xs[-2] if op.attrs().get("transpose_x", False) else xs[-1])
            flops, kind = 2 * math.prod(shape(out)) * k, "matmul"
        elif name in CONVS:
            flops = 2 * math.prod(shape(op.results()[0])) * math.prod(shape(op.operands_source()[1])[1:])
            kind = "conv"
        elif name in CONV_TRANSPOSES:
            x, w = shape(op.operands_source()[0]), shape(op.operands_source()[1])
            spatial = x[1:-1] if op.attrs().get("data_format", "NCHW") in ("NHWC", "NDHWC", "NLC") else x[2:]
            flops, kind = 2 * x[0] * math.prod(spatial) * math.prod(w), "conv"
        elif name in RNNS:
            x = shape(op.operands_source()[0])
            weights = op.operands_source()[2].get_defining_op().operands_source()
            matrices = sum(math.prod(shape(w)) for w in weights if len(w.shape) == 2)
            flops, kind = 2 * x[0] * x[1] * matrices, "rnn"
        else:
            if not name.startswith("builtin.") and short not in NO_ARITHMETIC:
                uncounted.add(name)
            continue
        total += flops
        kinds[kind] = kinds.get(kind, 0) + flops
    return FlopCount(total, "analytic", tuple(uncounted), by_kind=kinds)
