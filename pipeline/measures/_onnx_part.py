"""Part of an ONNX model as a model of its own, cut at the protobuf wire level (core/protowire.py): the nodes that
make some tensors from others, with the initializers they read, taking and giving float tensors of any shape. The
bytes are those onnx.helper serializes for the same part (tests/test_measures.py compares them); the onnx package
is not imported, whose import (its ml_dtypes) takes about 0.6 s of every run that measures DNSMOS.

Field numbers are onnx.proto3's: ModelProto ir_version 1, graph 7, opset_import 8; GraphProto node 1, name 2,
initializer 5, input 11, output 12; NodeProto input 1, output 2; TensorProto name 8; ValueInfoProto name 1, type 2;
TypeProto tensor_type 1; its Tensor elem_type 1 (FLOAT = 1)."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.protowire import VARINT, encode_varint, field, fields

FLOAT = 1  # TensorProto.DataType


def strings(message: bytes, number: int) -> list[str]:
    return [v.decode() for n, v, _ in fields(message) if n == number]


def float_tensor(name: str) -> bytes:
    """A ValueInfoProto: a float tensor of any shape, as onnx.helper.make_tensor_value_info(name, FLOAT, None)."""
    elem_type = encode_varint(1 << 3 | VARINT) + encode_varint(FLOAT)
    return field(1, name.encode()) + field(2, field(1, elem_type))


@dataclass(frozen=True)
class Node:
    inputs: list[str]
    outputs: list[str]
    written: bytes  # the graph's field as the model holds it


def part(model: bytes, inputs: list[str], outputs: list[str]) -> bytes:
    """The serialized model of the nodes from tensors `inputs` to `outputs` of the serialized ONNX `model`."""
    top = fields(model)
    graph = next(v for n, v, _ in top if n == 7)
    nodes, initializers = [], []
    for number, value, written in fields(graph):
        if number == 1:
            nodes.append(Node(strings(value, 1), strings(value, 2), written))
        elif number == 5:
            initializers.append((strings(value, 8)[0], written))
    made = {out: i for i, node in enumerate(nodes) for out in node.outputs}
    keep, todo, seen = set(), list(outputs), set(inputs)
    while todo:
        name = todo.pop()
        if name in seen or name not in made:
            continue
        seen.add(name)
        keep.add(made[name])
        todo.extend(nodes[made[name]].inputs)
    kept = [node for i, node in enumerate(nodes) if i in keep]
    used = {name for node in kept for name in node.inputs}
    body = b"".join(node.written for node in kept) + field(2, b"part") \
        + b"".join(written for name, written in initializers if name in used) \
        + b"".join(field(11, float_tensor(name)) for name in inputs) \
        + b"".join(field(12, float_tensor(name)) for name in outputs)
    ir_version = next(written for n, _, written in top if n == 1)
    opsets = b"".join(written for n, _, written in top if n == 8)
    return ir_version + field(7, body) + opsets
