"""Analytic FLOPs of an ONNX graph at the actual input shapes, for any backend that loads ONNX files.

Framework-free: it needs ``onnx`` and numpy only, and ``onnx`` (an optional dependency, the ``[onnx]`` extra) is
imported inside the functions, so importing this module imports nothing. The onnxruntime backend's ``flops.py``
calls it, and so can a plugin's (OpenVINO, TensorRT, a custom runtime) instead of writing its own counter:

    from speechperf.meters.onnx_flops import count_onnx_flops

    def count_flops(session, feeds):
        return count_onnx_flops(session, feeds)   # session.spec.path is the .onnx file it was loaded from

The convention is ``speechperf.meters.flops``'s (1 multiply-add = 2 FLOPs; MatMul, Gemm, Conv, ConvTranspose,
LSTM, GRU and RNN are counted; every other op with arithmetic is listed in ``uncounted``), so one model counts the
same here as on torch and paddle.

How: the model file is read with ``onnx``, its graph inputs are fixed to the feeds' shapes, and
``onnx.shape_inference.infer_shapes(..., data_prop=True)`` propagates them. Where inference leaves a counted op's
shape unknown (shapes computed at run time), or the graph has ``If`` nodes (silero's file is one ``If`` on ``sr``),
the graph is run once on the feeds with those tensors as extra outputs, by a *runner*: by default
``onnx.reference.ReferenceEvaluator`` (numpy, slow but framework-free); a backend passes a faster one built on its
own runtime (the onnxruntime backend passes an ORT session with optimisations off). The runner only supplies shapes
and branch conditions, so every runner gives the same count. The graph walked is the model file, not a runtime's
optimised graph, so the count does not depend on the optimisation level.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from speechperf.errors import SpeechperfError, first_line
from speechperf.meters.flops import FlopCount

#: A runner: given an ONNX model (a ``ModelProto`` whose graph outputs include the tensors wanted), a function of
#: the feeds returning ``{output name: array}`` for every graph output. Made once per model and set of outputs.
Runner = Callable[[Any], Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]]

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


def reference_runner(model) -> Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]:
    """The default runner: ``onnx.reference.ReferenceEvaluator`` (numpy only)."""
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model, new_ops=[_lstm_with_cell_state()])
    names = [o.name for o in model.graph.output]
    return lambda feeds: dict(zip(names, evaluator.run(None, dict(feeds))))


def _lstm_with_cell_state():
    """onnx's reference LSTM (1.17) returns Y and Y_h but not Y_c, so a graph that reads Y_c (silero's state
    output) cannot run on it: this one returns the last cell state too."""
    from onnx.reference.ops.op_lstm import LSTM as ReferenceLSTM

    class LSTM(ReferenceLSTM):
        def _step(self, X, R, B, W, H_0, C_0, P, num_directions):
            # The reference _step, keeping C_t; the cell update is the ONNX spec's (default activations).
            Y, Y_h = super()._step(X, R, B, W, H_0, C_0, P, num_directions)
            C_t, H_t = C_0, H_0
            p_i, p_o, p_f = np.split(P, 3)
            for x in np.split(X, X.shape[0], axis=0):
                gates = np.dot(x, W.T) + np.dot(H_t, R.T) + np.add(*np.split(B, 2))
                i, o, f, c = np.split(gates, 4, -1)
                i, f = self.f(i + p_i * C_t), self.f(f + p_f * C_t)
                C_t = f * C_t + i * self.g(c)
                H_t = self.f(o + p_o * C_t) * self.h(C_t)
            self._cell = C_t
            return Y, Y_h

        def _run(self, *args, **kwargs):
            outputs = super()._run(*args, **kwargs)
            if self.n_outputs < 3:
                return outputs
            # _step's cell state is (directions, batch, hidden), Y_c's shape at layout 0; layout 1 puts batch first.
            # OpRun.run passes every attribute of the node, ONNX's defaults included (layout 0), as keywords.
            cell = self._cell if kwargs.get("layout", 0) == 0 else np.swapaxes(self._cell, 0, 1)
            return (*outputs, cell.astype(outputs[0].dtype))

    return LSTM


class OnnxFlopCounter:
    """One ONNX model's counting state; keep one per session (``count_onnx_flops`` does).

    Shape inference runs on a copy of the graph made for every new set of input shapes (a decoding loop makes
    many). That copy is taken of a skeleton whose large weights are declared as inputs without their data: copying
    a 100 MB model per decoder step made counting a base-size decoding loop take minutes. A count that shape
    inference alone resolved depends only on the input shapes, so it is kept per shapes; one that needed a run of
    the graph is not.
    """

    def __init__(self, model, runner: Runner | None = None):
        self.model = model
        self.runner = runner or reference_runner
        self.skeleton = _skeleton(model)
        self.counts: dict = {}
        self._probes: dict = {}
        self._inlined: dict = {}
        self._counters: dict = {}

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> FlopCount:
        arrays = {k: np.asarray(v) for k, v in feeds.items()}
        key = tuple(sorted((k, v.shape, str(v.dtype)) for k, v in arrays.items()))
        if key in self.counts:
            return self.counts[key]
        count, static = self.count(arrays)
        if static:
            self.counts[key] = count
        return count

    def count(self, feeds: Mapping[str, np.ndarray]) -> tuple[FlopCount, bool]:
        """(count, whether shape inference alone gave every shape it needed)."""
        import onnx

        if any(node.op_type == "If" for node in self.model.graph.node):
            return self._count_taken_branches(feeds), False
        shapes = _infer_shapes(self.skeleton, feeds)
        graph = self.model.graph
        needed = [n for node in graph.node if node.op_type in KINDS for n in _operands(node) if n not in shapes]
        if needed:
            shapes.update(self._run_for_shapes(feeds, needed))
        total, kinds, uncounted = 0, dict[str, int](), set[str]()
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
        taken = self._taken_branches(feeds)
        if taken not in self._counters:
            self._counters[taken] = OnnxFlopCounter(self._inlined.get(taken, self.model), self.runner)
        return self._counters[taken].count(feeds)[0]

    def weight_bytes(self, feeds: Mapping[str, np.ndarray]) -> int:
        """Bytes of the weights one call on ``feeds`` reads: the initializers and the ``Constant`` tensors of the
        graph as it runs (each ``If`` replaced by the branch it takes; the bodies of loops counted once). Silero's
        file keeps its weights as Constant nodes inside the two branches of an If on ``sr`` (16 and 8 kHz): the
        initializers hold none of them, and both branches are both networks."""
        taken = self._taken_branches({k: np.asarray(v) for k, v in feeds.items()})
        return _graph_weight_bytes(self._inlined.get(taken, self.model).graph)

    def _taken_branches(self, feeds) -> tuple[tuple[bool, ...], ...]:
        """The branch choices of the If nodes on ``feeds``, level by level; ``self._inlined`` holds the flat graph
        of each choice made so far."""
        model = self.model
        taken: tuple[tuple[bool, ...], ...] = ()  # the branch choices, level by level
        for _ in range(MAX_IF_NESTING):
            ifs = [node for node in model.graph.node if node.op_type == "If"]
            if not ifs:
                break
            if taken not in self._probes:
                self._probes[taken] = self._probe(model, tuple(node.input[0] for node in ifs))
            values = _run(self._probes[taken], feeds)
            choice = tuple(bool(np.asarray(values[node.input[0]]).reshape(-1)[0]) for node in ifs)
            taken = taken + (choice,)
            if taken not in self._inlined:
                self._inlined[taken] = _take_branches(model, ifs, choice)
            model = self._inlined[taken]
        return taken

    def _run_for_shapes(self, feeds, names: list[str]) -> dict[str, tuple[int, ...]]:
        """Run the graph with ``names`` as extra outputs; the probe is made once per set of names."""
        key = tuple(sorted(set(names)))
        if key not in self._probes:
            self._probes[key] = self._probe(self.model, key)
        return {name: tuple(np.asarray(v).shape) for name, v in _run(self._probes[key], feeds).items()}

    def _probe(self, model, names: tuple[str, ...]):
        """The runner over a copy of ``model`` whose outputs include ``names``."""
        import onnx

        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        # Only the nodes the wanted tensors depend on run: an If's condition needs none of its branches.
        kept = _needed_nodes(probe.graph, names)
        del probe.graph.node[:]
        probe.graph.node.extend(kept)
        del probe.graph.output[:]
        probe.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
        return self.runner(probe)


def _needed_nodes(graph, names) -> list:
    """The nodes of ``graph`` that computing ``names`` runs, in graph order. A node with subgraphs depends on the
    outer values its subgraphs read too (over-approximated by every input name inside them)."""
    producer = {out: node for node in graph.node for out in node.output}
    wanted, seen, stack = set(), set(), list(names)
    while stack:
        name = stack.pop()
        node = producer.get(name)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        wanted.add(id(node))
        stack.extend(node.input)
        stack.extend(_subgraph_inputs(node))
    return [node for node in graph.node if id(node) in wanted]


def _subgraph_inputs(node) -> list[str]:
    found = []
    for attr in node.attribute:
        for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
            for inner in sub.node:
                found.extend(inner.input)
                found.extend(_subgraph_inputs(inner))
    return found


def _run(probe, feeds) -> dict[str, np.ndarray]:
    try:
        return dict(probe(dict(feeds)))
    except Exception as exc:
        raise SpeechperfError(
            f"cannot count FLOPs: running the graph on these feeds (for shapes or If conditions it needs) "
            f"failed ({first_line(exc)[:300]}); was the model exported with these input sizes fixed?"
        ) from None


# session -> its OnnxFlopCounter
_counters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def onnx_weight_bytes(
    source, feeds: Mapping[str, np.ndarray], runner: Runner | None = None, model_of: Callable | None = None
) -> int:
    """Bytes of the weights one call of ``source`` on ``feeds`` reads (``OnnxFlopCounter.weight_bytes``), for the
    roofline's traffic bound; ``source``, ``runner`` and ``model_of`` as ``count_onnx_flops`` takes them (a
    session shares its counter, so the branches its FLOPs were counted on are found once)."""
    return _counter_of(source, runner, model_of).weight_bytes(feeds)


def _graph_weight_bytes(graph) -> int:
    """Bytes of the initializers and Constant tensors of ``graph`` and of the subgraphs its nodes hold."""
    import onnx
    from onnx import helper

    def size(tensor) -> int:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        return int(np.prod(tensor.dims, dtype=np.int64)) * itemsize

    total = sum(size(init) for init in graph.initializer)
    for node in graph.node:
        for attribute in node.attribute:
            if node.op_type == "Constant" and attribute.type == onnx.AttributeProto.TENSOR:
                total += size(attribute.t)
            for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                total += _graph_weight_bytes(sub)
    return total


def count_onnx_flops(
    source, feeds: Mapping[str, np.ndarray], runner: Runner | None = None, model_of: Callable | None = None
) -> FlopCount:
    """The FlopCount of one call of ``source`` on ``feeds``.

    ``source`` is a Session loaded from an ONNX file (``session.spec.path``, set by ``BackendBase.load``), a path,
    or an ``onnx.ModelProto``. ``model_of(session)`` returns the ModelProto of a session whose file is not known
    (one built in memory), or None; it is called once per session. ``runner`` runs the graph where shapes or If conditions are known only at run time (default:
    ``reference_runner``). A session's counter is made on its first count and kept as long as the session lives.
    """
    return _counter_of(source, runner, model_of)(feeds)


def _counter_of(source, runner: Runner | None, model_of: Callable | None) -> OnnxFlopCounter:
    import onnx

    if isinstance(source, onnx.ModelProto):
        return OnnxFlopCounter(source, runner)
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        return OnnxFlopCounter(onnx.load(str(source)), runner)
    try:
        return _counters[source]
    except (KeyError, TypeError):
        pass
    model = model_of(source) if model_of is not None else None
    if model is None:
        spec = getattr(source, "spec", None)
        path = getattr(spec, "path", None)
        if path is None:
            raise SpeechperfError(
                f"cannot count FLOPs of {source!r}: its ONNX model file is not known (the session has no "
                "spec.path, which BackendBase.load sets; pass model_of= for a session built in memory)"
            )
        model = onnx.load(str(Path(path)))
    counter = OnnxFlopCounter(model, runner)
    _counters[source] = counter
    return counter


def _take_branches(model, ifs: list, choice: tuple[bool, ...]):
    """A copy of ``model`` with each If of ``ifs`` replaced by the nodes of the branch ``choice`` says it takes;
    the branch outputs are renamed to the If's outputs through Identity nodes. Branch nodes may read any value of
    the outer graph, which stays in scope where they are put."""
    import onnx

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


def _skeleton(model):
    import onnx

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


def _infer_shapes(model, feeds: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    import onnx
    from onnx import shape_inference

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


def _node_flops(node, shapes: Mapping[str, tuple[int, ...]]) -> int:
    import onnx

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
