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

from speechperf.errors import SpeechperfError, first_line
from speechperf.meters.flops import FlopCount

KINDS = {
    "MatMul": "matmul",
    "Gemm": "matmul",
    "Conv": "conv",
    "ConvTranspose": "conv",
    "LSTM": "rnn",
    "GRU": "rnn",
    "RNN": "rnn",
    # int8 kernels of onnxruntime.quantization: a multiply-add is 2 operations, integer or not, so an int8 graph
    # counts the same work as its fp32 source (DynamicQuantizeLinear, QuantizeLinear and DequantizeLinear are
    # elementwise and listed as uncounted).
    "MatMulInteger": "matmul",
    "QLinearMatMul": "matmul",
    "ConvInteger": "conv",
    "QLinearConv": "conv",
    "DynamicQuantizeLSTM": "rnn",
}
#: Where the data and the weight are among an op's inputs, for the ops whose formula needs them.
_DATA_WEIGHT = {"QLinearMatMul": (0, 3), "QLinearConv": (0, 3)}
_AS = {"MatMulInteger": "MatMul", "QLinearMatMul": "MatMul", "ConvInteger": "Conv", "QLinearConv": "Conv"}
# Ops with no floating point work at all: never listed as uncounted.
NO_ARITHMETIC = {
    "Reshape",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Shape",
    "Gather",
    "Concat",
    "Slice",
    "Split",
    "Constant",
    "ConstantOfShape",
    "Identity",
    "Cast",
    "Expand",
    "Flatten",
    "Range",
    "Size",
    "GatherElements",
    "ScatterND",
    "Tile",
    "Pad",
    "Unique",
    "NonZero",
    "Where",
    "Equal",
    "Less",
    "Greater",
    "Not",
    "And",
    "Or",
    "ArgMax",
    "TopK",
}

#: If nodes nested deeper than this are left uncounted (each level costs one run of the graph).
MAX_IF_NESTING = 16

#: Initializers up to this many elements stay in the graph shape inference sees: they may be shapes it propagates.
SMALL_INITIALIZER = 64


class _Counter:
    """One ONNX model's counting state, kept per session.

    Shape inference runs on a copy of the graph made for every new set of input shapes (a decoding loop makes
    many). That copy is taken of a skeleton whose large weights are declared as inputs without their data: copying
    a 100 MB model per decoder step made counting a base-size decoding loop take minutes.
    """

    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.skeleton = _skeleton(model)
        self.counts: dict = {}
        self._probes: dict = {}
        self._inlined: dict = {}
        self._counters: dict = {}

    def count(self, feeds: Mapping[str, np.ndarray]) -> tuple[FlopCount, bool]:
        """(count, whether shape inference alone gave every shape it needed)."""
        if any(node.op_type == "If" for node in self.model.graph.node):
            return self._count_taken_branches(feeds), False
        shapes = _infer_shapes(self.skeleton, feeds)
        graph = self.model.graph
        needed = [n for node in graph.node if node.op_type in KINDS for n in _operands(node) if n not in shapes]
        if needed:
            shapes.update(self._run_for_shapes(feeds, needed))
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

    def _count_taken_branches(self, feeds) -> FlopCount:
        """Count an ``If`` graph as it runs on ``feeds``: each If is replaced by the branch its condition takes
        (read by running the graph), level by level, and the resulting flat graph is counted. Silero's ONNX file
        is one If on ``sr`` whose branches hold the whole network; counting neither made its FLOPs 0."""
        model, taken = self.model, ()
        for _ in range(MAX_IF_NESTING):
            ifs = [node for node in model.graph.node if node.op_type == "If"]
            if not ifs:
                break
            if taken not in self._probes:
                self._probes[taken] = _probe_session(model, tuple(node.input[0] for node in ifs))
            values = self._run(self._probes[taken], feeds)
            choice = tuple(bool(np.asarray(values[node.input[0]]).reshape(-1)[0]) for node in ifs)
            taken = taken + (choice,)
            if taken not in self._inlined:
                self._inlined[taken] = _take_branches(model, ifs, choice)
            model = self._inlined[taken]
        if taken not in self._counters:
            self._counters[taken] = _Counter(model)
        return self._counters[taken].count(feeds)[0]

    def _run_for_shapes(self, feeds, names: list[str]) -> dict[str, tuple[int, ...]]:
        """Run the graph (optimisations off) with ``names`` as extra outputs; the probe session is made once."""
        key = tuple(sorted(set(names)))
        if key not in self._probes:
            self._probes[key] = _probe_session(self.model, key)
        return {name: tuple(np.asarray(v).shape) for name, v in self._run(self._probes[key], feeds).items()}

    @staticmethod
    def _run(session, feeds) -> dict[str, np.ndarray]:
        outputs = [o.name for o in session.get_outputs()]
        try:
            values = session.run(outputs, dict(feeds))
        except Exception as exc:
            raise SpeechperfError(
                f"cannot count FLOPs: running the graph on these feeds (for shapes or If conditions it needs) "
                f"failed ({first_line(exc)[:300]}); was the model exported with these input sizes fixed?"
            ) from None
        return dict(zip(outputs, values))


# session -> its _Counter
_counters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def count_flops(session, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    """FlopCount of one call of an OnnxRuntimeSession (or a path / ModelProto) on ``feeds``.

    A count that shape inference alone resolved depends only on the input shapes, so it is cached per session and
    shapes (a decoding loop calls the same shapes again and again); one that needed a run of the graph is not.
    """
    arrays = {k: np.asarray(v) for k, v in feeds.items()}
    counter = _counter_of(session)
    key = tuple(sorted((k, v.shape, str(v.dtype)) for k, v in arrays.items()))
    if key in counter.counts:
        return counter.counts[key]
    count, static = counter.count(arrays)
    if static:
        counter.counts[key] = count
    return count


def _counter_of(session) -> _Counter:
    if isinstance(session, onnx.ModelProto):
        return _Counter(session)
    if isinstance(session, (str, bytes)) or hasattr(session, "__fspath__"):
        return _Counter(onnx.load(str(session)))
    if session in _counters:
        return _counters[session]
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
    _counters[session] = _Counter(model)
    return _counters[session]


def count_model_flops(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> FlopCount:
    return _Counter(model).count(feeds)[0]


def _take_branches(model: onnx.ModelProto, ifs: list, choice: tuple[bool, ...]) -> onnx.ModelProto:
    """A copy of ``model`` with each If of ``ifs`` replaced by the nodes of the branch ``choice`` says it takes;
    the branch outputs are renamed to the If's outputs through Identity nodes. Branch nodes may read any value of
    the outer graph, which stays in scope where they are put."""
    taken = {node.output[0]: ("then_branch" if c else "else_branch") for node, c in zip(ifs, choice)}
    flat = onnx.ModelProto()
    flat.CopyFrom(model)
    nodes = []
    for node in flat.graph.node:
        if node.op_type != "If" or node.output[0] not in taken:
            nodes.append(node)
            continue
        branch = next(a.g for a in node.attribute if a.name == taken[node.output[0]])
        nodes.extend(branch.node)
        flat.graph.initializer.extend(branch.initializer)
        nodes.extend(
            onnx.helper.make_node("Identity", [inner.name], [outer]) for inner, outer in zip(branch.output, node.output)
        )
    del flat.graph.node[:]
    flat.graph.node.extend(nodes)
    return flat


def _skeleton(model: onnx.ModelProto) -> onnx.ModelProto:
    skeleton = onnx.ModelProto()
    skeleton.CopyFrom(model)
    graph = skeleton.graph
    small = [init for init in graph.initializer if math.prod(init.dims) <= SMALL_INITIALIZER]
    for init in graph.initializer:
        if math.prod(init.dims) > SMALL_INITIALIZER:
            graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    del graph.initializer[:]
    graph.initializer.extend(small)
    return skeleton


def _operands(node) -> list[str]:
    """The inputs (and for MatMul/Conv, the output) whose shapes the formula needs."""
    if node.op_type in ("LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"):
        return list(node.input[:3])
    data, weight = _DATA_WEIGHT.get(node.op_type, (0, 1))
    return [n for n in (node.input[data], node.input[weight], node.output[0]) if n]


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


def _probe_session(model: onnx.ModelProto, names: tuple[str, ...]):
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    for name in names:
        if name not in known:
            probe.graph.output.append(onnx.ValueInfoProto(name=name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _node_flops(node, shapes: Mapping[str, tuple[int, ...]]) -> int:
    def shape(name: str) -> tuple[int, ...]:
        if name not in shapes:
            raise SpeechperfError(f"cannot count FLOPs of {node.op_type} node {node.name!r}: shape of {name!r} unknown")
        return shapes[name]

    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    op = _AS.get(node.op_type, node.op_type)
    data, weight = _DATA_WEIGHT.get(node.op_type, (0, 1))
    if op == "MatMul":
        a = shape(node.input[data])
        return 2 * math.prod(shape(node.output[0])) * a[-1]
    if op == "Gemm":
        a = shape(node.input[0])
        k = a[0] if attrs.get("transA", 0) else a[1]
        return 2 * math.prod(shape(node.output[0])) * k
    if op == "Conv":
        return 2 * math.prod(shape(node.output[0])) * math.prod(shape(node.input[weight])[1:])
    if op == "ConvTranspose":
        x = shape(node.input[0])
        return 2 * x[0] * math.prod(x[2:]) * math.prod(shape(node.input[1]))
    # LSTM / GRU / RNN: X is [T, B, I] (layout 0) or [B, T, I] (layout 1); both give steps * batch.
    x = shape(node.input[0])
    weights = math.prod(shape(node.input[1])) + math.prod(shape(node.input[2]))
    return 2 * x[0] * x[1] * weights
