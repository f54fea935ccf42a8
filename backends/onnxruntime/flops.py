"""Analytic FLOPs of an ONNX graph at the actual input shapes (see ``speechperf.meters.flops`` for the convention).

The model file behind the session is read with ``onnx``, its graph inputs are fixed to the feeds' shapes, and
``onnx.shape_inference.infer_shapes(..., data_prop=True)`` propagates them. Where inference leaves a counted op's
shape unknown (shapes computed at run time), the graph is run once with onnxruntime (optimisations off) with those
tensors as extra outputs, and their real shapes are used. The graph walked is the model file, not ORT's optimised
graph, so the count does not depend on the optimisation level.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import shape_inference

from speechperf.errors import SpeechperfError
from speechperf.meters.flops import FlopCount

KINDS = {"MatMul": "matmul", "Gemm": "matmul", "Conv": "conv", "ConvTranspose": "conv",
         "LSTM": "rnn", "GRU": "rnn", "RNN": "rnn"}
# Ops with no floating point work at all: never listed as uncounted.
NO_ARITHMETIC = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Shape", "Gather", "Concat", "Slice", "Split",
                 "Constant", "ConstantOfShape", "Identity", "Cast", "Expand", "Flatten", "Range", "Size",
                 "GatherElements", "ScatterND", "Tile", "Pad", "Unique", "NonZero", "Where", "Equal", "Less",
                 "Greater", "Not", "And", "Or", "ArgMax", "TopK"}

# session -> (its ONNX model, {input shapes: FlopCount})
_models: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def count_flops(session, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    """FlopCount of one call of an OnnxRuntimeSession (or a path / ModelProto) on ``feeds``.

    A count that shape inference alone resolved depends only on the input shapes, so it is cached per session and
    shapes (a decoding loop calls the same shapes again and again); one that needed a run of the graph is not.
    """
    arrays = {k: np.asarray(v) for k, v in feeds.items()}
    model, cache = _model_of(session)
    key = tuple(sorted((k, v.shape, str(v.dtype)) for k, v in arrays.items()))
    if key in cache:
        return cache[key]
    count, static = _count(model, arrays)
    if static:
        cache[key] = count
    return count


def _model_of(session) -> tuple[onnx.ModelProto, dict]:
    if isinstance(session, onnx.ModelProto):
        return session, {}
    if isinstance(session, (str, bytes)) or hasattr(session, "__fspath__"):
        return onnx.load(str(session)), {}
    if session in _models:
        return _models[session]
    inner = getattr(session, "session", None)
    loaded_with = getattr(session, "loaded_with", None)  # (spec, threads, providers) from load_onnx
    path = getattr(inner, "_model_path", None) or (loaded_with[0].path if loaded_with else None)
    data = getattr(inner, "_model_bytes", None)
    if path:
        model = onnx.load(path)
    elif data:
        model = onnx.load_from_string(data)
    else:
        raise SpeechperfError(f"cannot count FLOPs of {session!r}: its ONNX model file is not known")
    _models[session] = (model, {})
    return _models[session]


def count_model_flops(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    return _count(model, feeds)[0]


def _count(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> tuple[FlopCount, bool]:
    """(count, whether shape inference alone gave every shape it needed)."""
    shapes = _infer_shapes(model, feeds)
    graph = model.graph
    needed = [name for node in graph.node if node.op_type in KINDS for name in _operands(node) if name not in shapes]
    if needed:
        shapes.update(_run_for_shapes(model, feeds, needed))
    total, kinds, uncounted = 0, {}, set()
    for node in graph.node:
        if node.op_type in KINDS:
            flops = _node_flops(node, shapes)
            total += flops
            kinds[KINDS[node.op_type]] = kinds.get(KINDS[node.op_type], 0) + flops
        elif node.op_type not in NO_ARITHMETIC:
            graphs = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            has_subgraph = any(a.type in graphs for a in node.attribute)
            uncounted.add(f"{node.op_type} (its subgraphs are not counted)" if has_subgraph else node.op_type)
    return FlopCount(total, "analytic", tuple(uncounted), by_kind=kinds), not needed


def _operands(node) -> list[str]:
    """The inputs (and for MatMul/Conv, the output) whose shapes the formula needs."""
    if node.op_type in ("LSTM", "GRU", "RNN"):
        return list(node.input[:3])
    return [n for n in list(node.input[:2]) + [node.output[0]] if n]


def _infer_shapes(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for value in fixed.graph.input:
        if value.name in feeds:
            dims = value.type.tensor_type.shape.dim
            shape = feeds[value.name].shape
            del dims[:]
            for size in shape:
                dims.add().dim_value = int(size)
    try:
        inferred = shape_inference.infer_shapes(fixed, data_prop=True)
    except Exception:
        inferred = fixed  # fall back to running the graph for every shape
    shapes = {init.name: tuple(init.dims) for init in inferred.graph.initializer}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            continue
        dims = value.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    for node in inferred.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    shapes[node.output[0]] = tuple(attr.t.dims)
    return shapes


def _run_for_shapes(model: onnx.ModelProto, feeds, names: list[str]) -> dict[str, tuple[int, ...]]:
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    for name in dict.fromkeys(names):
        if name not in known:
            probe.graph.output.append(onnx.ValueInfoProto(name=name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    try:
        values = session.run(outputs, dict(feeds))
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SpeechperfError(
            f"cannot count FLOPs: shape inference left some shapes unknown and running the graph on these feeds "
            f"failed ({first[:300]}); was the model exported with these input sizes fixed?"
        ) from None
    return {name: tuple(np.asarray(v).shape) for name, v in zip(outputs, values)}


def _node_flops(node, shapes: Mapping[str, tuple[int, ...]]) -> int:
    def shape(name: str) -> tuple[int, ...]:
        if name not in shapes:
            raise SpeechperfError(f"cannot count FLOPs of {node.op_type} node {node.name!r}: shape of {name!r} unknown")
        return shapes[name]

    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    op = node.op_type
    if op == "MatMul":
        a = shape(node.input[0])
        return 2 * math.prod(shape(node.output[0])) * a[-1]
    if op == "Gemm":
        a = shape(node.input[0])
        k = a[0] if attrs.get("transA", 0) else a[1]
        return 2 * math.prod(shape(node.output[0])) * k
    if op == "Conv":
        return 2 * math.prod(shape(node.output[0])) * math.prod(shape(node.input[1])[1:])
    if op == "ConvTranspose":
        x = shape(node.input[0])
        return 2 * x[0] * math.prod(x[2:]) * math.prod(shape(node.input[1]))
    # LSTM / GRU / RNN: X is [T, B, I] (layout 0) or [B, T, I] (layout 1); both give steps * batch.
    x = shape(node.input[0])
    weights = math.prod(shape(node.input[1])) + math.prod(shape(node.input[2]))
    return 2 * x[0] * x[1] * weights


def known_session(graph, threads: int | None = None):
    """An OnnxRuntimeSession over a one-node graph computing a KnownGraph (``MatMul`` or ``Conv``)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from speechperf.backends.onnxruntime.session import OnnxRuntimeSession

    op = "MatMul" if graph.kind == "matmul" else "Conv"
    node = helper.make_node(op, ["x", "w"], ["y"])
    model = helper.make_model(
        helper.make_graph(
            [node], f"known_{graph.kind}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(graph.input_shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(graph.weight(), "w")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    data = model.SerializeToString()
    session = OnnxRuntimeSession(ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]), "cpu")
    _models[session] = (model, {})
    return session
