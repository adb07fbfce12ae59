"""Integer matrix products for a model that stores its weights in int8.

A model exported with int8 weights and a float scale per output column computes
``x @ (float(q) * scale)``: ONNX Runtime folds that into float32 weights when it loads, so every
product reads four times the bytes it stored, and a short text's embedding is bound by memory.
Rewritten here as ONNX Runtime's ``DynamicQuantizeMatMul``, the same int8 weights multiply
activations quantized per call, which halves a query's CPU time on this model. The activations'
scale is taken over the whole input, so a text's vector depends on the texts batched with it:
a caller that wants one vector per text whatever the batch runs one text per call.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["int8_products"]

_MICROSOFT = "com.microsoft"


def int8_products(model: Path) -> bytes | None:
    """The model with each float product over int8 weights made an integer product, serialized;
    None when it has no such product (the model loads as it is)."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(model))
    graph = proto.graph
    weights = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    rewritten, changed = [], 0
    for node in graph.node:
        found = _quantized_weight(node, producer, weights) if node.op_type == "MatMul" else None
        if found is None:
            rewritten.append(node)
            continue
        q_name, scale_name = found
        columns, zero = f"{scale_name}_columns", f"{scale_name}_zero"
        if columns not in weights:
            scale = numpy_helper.to_array(weights[scale_name]).astype(np.float32).reshape(-1)
            for tensor in (
                numpy_helper.from_array(scale, columns),
                numpy_helper.from_array(np.zeros(scale.shape, np.int8), zero),
            ):
                graph.initializer.append(tensor)
                weights[tensor.name] = tensor
        changed += 1
        rewritten.append(
            onnx.helper.make_node(
                "DynamicQuantizeMatMul",
                [node.input[0], q_name, columns, zero],
                list(node.output),
                name=f"{node.name}_int8",
                domain=_MICROSOFT,
            )
        )
    if not changed:
        return None
    _keep_only_read(graph, rewritten)
    if not any(o.domain == _MICROSOFT for o in proto.opset_import):
        proto.opset_import.append(onnx.helper.make_opsetid(_MICROSOFT, 1))
    return bytes(proto.SerializeToString())


def _quantized_weight(
    node: Any, producer: dict[str, Any], weights: dict[str, Any]
) -> tuple[str, str] | None:
    """``(int8 weights, column scale)`` when the product's right side is
    ``Mul(Cast(int8 [K, N]), float [1, N])`` over initializers, else None."""
    import onnx

    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul":
        return None
    for cast_out, scale_name in ((mul.input[0], mul.input[1]), (mul.input[1], mul.input[0])):
        cast = producer.get(cast_out)
        if cast is None or cast.op_type != "Cast" or scale_name not in weights:
            continue
        q = weights.get(cast.input[0])
        scale = weights[scale_name]
        if q is None or q.data_type != onnx.TensorProto.INT8 or len(q.dims) != 2:
            continue
        if scale.data_type == onnx.TensorProto.FLOAT and list(scale.dims) in (
            [1, q.dims[1]],
            [q.dims[1]],
        ):
            return q.name, scale_name
    return None


def _keep_only_read(graph: Any, nodes: list[Any]) -> None:
    """Set the graph's nodes to ``nodes`` less those whose outputs nothing reads any more,
    and drop the initializers no node reads (the float copies would be folded for nothing)."""
    outputs = {o.name for o in graph.output}
    while True:
        reads = Counter(name for node in nodes for name in node.input)
        kept = [n for n in nodes if any(reads[o] or o in outputs for o in n.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del graph.node[:]
    graph.node.extend(nodes)
    read = {name for node in nodes for name in node.input}
    unread = [i for i in graph.initializer if i.name not in read]
    for tensor in unread:
        graph.initializer.remove(tensor)
