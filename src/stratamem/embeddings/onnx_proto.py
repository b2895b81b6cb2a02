"""The subset of the ONNX protobuf messages the default model's graph uses, written without the ``onnx`` package.

``onnx`` (with its ``ml_dtypes`` dependency) is only a serialiser here: the builder needs nodes with int,
float and int-list attributes, tensors stored as ``raw_data``, tensor value infos with symbolic or fixed
dimensions, a graph and a model with one opset import. Each message is encoded in the protobuf wire
format directly, fields in ascending field number, the order protobuf's own serialiser writes them, so
the bytes are those ``onnx.helper`` + ``onnx.numpy_helper`` + ``SerializeToString`` give for the same
graph (``tests/retrieval/test_onnx.py`` compares them where ``onnx`` is installed). Field numbers are
those of ``onnx/onnx.proto``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

#: ``TensorProto.DataType`` values used by the builder.
FLOAT = 1
UINT8 = 2
INT8 = 3
INT64 = 7
_DTYPES: dict[np.dtype[np.generic], int] = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.int64): INT64,
}
#: ``AttributeProto.AttributeType`` values.
_ATTR_FLOAT = 1
_ATTR_INT = 2
_ATTR_INTS = 7


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are written as their 64-bit two's complement (10 bytes)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _int(number: int, value: int) -> bytes:
    return _key(number, 0) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode("utf-8"))


def _float(number: int, value: float) -> bytes:
    return _key(number, 5) + struct.pack("<f", value)


def tensor(name: str, array: npt.NDArray[np.generic]) -> bytes:
    """A ``TensorProto`` (dims, data_type, name, raw_data little-endian) of a float32, (u)int8 or int64 array."""
    data = np.ascontiguousarray(array)
    dtype = _DTYPES[data.dtype]
    dims = b"".join(_int(1, d) for d in data.shape)
    return dims + _int(2, dtype) + _str(8, name) + _bytes(9, data.astype(data.dtype.newbyteorder("<")).tobytes())


def _attribute(name: str, value: int | float | Sequence[int]) -> bytes:
    if isinstance(value, bool):
        raise TypeError(f"attribute {name}: booleans are not written by this encoder")
    if isinstance(value, int):
        body = _str(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    elif isinstance(value, float):
        body = _str(1, name) + _float(2, value) + _int(20, _ATTR_FLOAT)
    else:
        body = _str(1, name) + b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)
    return body


@dataclass(frozen=True)
class Node:
    """A ``NodeProto`` of the default domain; attributes are written sorted by name (as ``make_node`` does)."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    name: str
    attributes: dict[str, int | float | list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return (
            b"".join(_str(1, i) for i in self.inputs)
            + b"".join(_str(2, o) for o in self.outputs)
            + _str(3, self.name)
            + _str(4, self.op_type)
            + b"".join(_bytes(5, _attribute(k, v)) for k, v in sorted(self.attributes.items()))
        )


def value_info(name: str, elem_type: int, shape: Sequence[str | int]) -> bytes:
    """A ``ValueInfoProto`` of a tensor: ``str`` dimensions are symbolic (dim_param), ``int`` fixed (dim_value)."""
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    *,
    nodes: Sequence[Node],
    graph_name: str,
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    initializers: Sequence[bytes],
    opset: int,
    ir_version: int,
    producer_name: str,
) -> bytes:
    """A serialised ``ModelProto`` with one graph and one default-domain opset import."""
    graph = (
        b"".join(_bytes(1, n.encode()) for n in nodes)
        + _str(2, graph_name)
        + b"".join(_bytes(5, t) for t in initializers)
        + b"".join(_bytes(11, i) for i in inputs)
        + b"".join(_bytes(12, o) for o in outputs)
    )
    opset_import = _str(1, "") + _int(2, opset)
    return _int(1, ir_version) + _str(2, producer_name) + _bytes(7, graph) + _bytes(8, opset_import)
