"""What a backend that loads ONNX files gets from the core, so that its plugin is only its session and threads.

- ``onnx_dtype(elem_type)``: the numpy dtype name of an ONNX element type, None where numpy has none (bfloat16,
  float8, int4, string); ``onnx.helper.tensor_dtype_to_np_dtype`` gives float32 for bfloat16 and float8 and
  int8/uint8 for the int4 types, which would make ``Session.__call__`` refuse the right feeds.
- ``onnx_tensor_infos(path)``: the inputs and outputs of an ONNX file as ``TensorInfo`` tuples, named as in the file.
- ``write_known_graph(graph, path)``: a ``KnownGraph`` (float32 or int8) as a one-node ONNX file.

The FLOP count (``speechperf.meters.onnx_flops.count_onnx_flops``) and the weight bytes
(``onnx_weight_bytes``) of a session loaded from an ONNX file live beside these. Each imports onnx when called.
"""

from __future__ import annotations

from pathlib import Path

from speechperf.backend import TensorInfo
from speechperf.outputs import atomic_path

#: ONNX element type -> numpy dtype name, for the types numpy holds exactly; any other is None.
ONNX_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
}


def onnx_dtype(elem_type: int) -> str | None:
    """The ``TensorInfo.dtype`` of ONNX element type ``elem_type`` (``TensorProto.FLOAT`` -> ``"float32"``)."""
    return ONNX_DTYPES.get(int(elem_type))


def tensor_info(value) -> TensorInfo:
    """An ``onnx.ValueInfoProto`` as a ``TensorInfo``: dtype and shape None for a value that is not a tensor."""
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        return TensorInfo(value.name)
    tensor = value.type.tensor_type
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)
    return TensorInfo(value.name, onnx_dtype(tensor.elem_type), shape)


def onnx_tensor_infos(model) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
    """(inputs, outputs) of ``model`` (a path or an ``onnx.ModelProto``); weights listed among the inputs (IR < 4)
    are left out."""
    import onnx

    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model), load_external_data=False)
    weights = {init.name for init in model.graph.initializer}
    inputs = tuple(tensor_info(v) for v in model.graph.input if v.name not in weights)
    return inputs, tuple(tensor_info(v) for v in model.graph.output)


def known_graph_model(graph):
    """``graph`` (a ``KnownGraph``) as an ``onnx.ModelProto``: ``MatMul`` or ``Conv`` over input ``x`` and the
    initializer ``w``; with ``dtype="int8"``, ``MatMulInteger`` / ``ConvInteger`` (x uint8, w int8 -> y int32)."""
    from onnx import TensorProto, helper, numpy_helper

    op = "MatMul" if graph.kind == "matmul" else "Conv"
    x_type = y_type = TensorProto.FLOAT
    if graph.dtype == "int8":
        op, x_type, y_type = op + "Integer", TensorProto.UINT8, TensorProto.INT32
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node(op, ["x", "w"], ["y"])],
            f"known_{graph.kind}_{graph.dtype}",
            [helper.make_tensor_value_info("x", x_type, list(graph.input_shape))],
            [helper.make_tensor_value_info("y", y_type, None)],
            [numpy_helper.from_array(graph.weight(), "w")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    return model


def write_known_graph(graph, path: str | Path) -> Path:
    """``known_graph_model(graph)`` written atomically to ``path``; returns the path."""
    with atomic_path(path, "known graph") as tmp:
        tmp.write_bytes(known_graph_model(graph).SerializeToString())
    return Path(path)
