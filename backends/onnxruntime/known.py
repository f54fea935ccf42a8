"""A session over a KnownGraph as a one-node ONNX graph (``speechperf check`` validates FLOPs and thread pinning
on it). The FLOP counter finds the graph through the session's model bytes."""

from __future__ import annotations


def known_session(graph, threads: int | None = None):
    """An OnnxRuntimeSession over a one-node graph computing a KnownGraph (``MatMul`` or ``Conv``)."""
    import onnxruntime as ort

    from speechperf.backends.onnxruntime.session import OnnxRuntimeSession
    from speechperf.meters.onnx_files import known_graph_model

    model = known_graph_model(graph)
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    data = model.SerializeToString()
    return OnnxRuntimeSession(ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]), "cpu")
