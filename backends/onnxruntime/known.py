"""A session over a KnownGraph as a one-node ONNX graph (``speechperf check`` validates FLOPs and thread pinning
on it). The FLOP counter finds the graph through the session's model bytes."""

from __future__ import annotations


def known_session(graph, threads: int | None = None):
    """An OnnxRuntimeSession over a one-node graph computing a KnownGraph (``MatMul`` or ``Conv``)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from speechperf.backends.onnxruntime.session import OnnxRuntimeSession

    op = "MatMul" if graph.kind == "matmul" else "Conv"
    element = TensorProto.FLOAT
    if graph.dtype == "int8":  # the int8 GEMM kernel: uint8 x int8 -> int32
        op, element = "MatMulInteger", TensorProto.UINT8
    node = helper.make_node(op, ["x", "w"], ["y"])
    model = helper.make_model(
        helper.make_graph(
            [node],
            f"known_{graph.kind}",
            [helper.make_tensor_value_info("x", element, list(graph.input_shape))],
            [helper.make_tensor_value_info("y", TensorProto.INT32 if graph.dtype == "int8" else element, None)],
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
    return OnnxRuntimeSession(ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]), "cpu")
