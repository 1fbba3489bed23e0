#!/usr/bin/env python3
"""Writes the crafted model of issue 32: one Relu and N header-only initializers.

Each initializer is a TensorProto with dims [1], data_type FLOAT and a name, but no data: the
file is a valid ONNX ModelProto of about 25 bytes per initializer (600,000 -> 15 MB), inside
every limit that counts graph nodes only, and it cost `gpucast predict` 6.4 s and 745 MB
(measured on main 3b56f8b). The live Slurm test (test.sh) submits it to time what one user
can cost slurmctld.

The protobuf wire format is written by hand (field numbers from onnx.proto): no onnx package
needed, and 600,000 initializers take well under a second.

Usage: crafted_model.py OUT.onnx [N=600000]
"""
import struct
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):  # a length-delimited field (wire type 2)
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vint(num, value):  # a varint field (wire type 0)
    return varint(num << 3) + varint(value)


def value_info(name):
    # ValueInfoProto{name=1, type=2{TypeProto.tensor_type=1{elem_type=1, shape=2{dim=1{dim_value=1}}}}}
    dim = field(1, vint(1, 1))
    tensor = vint(1, 1) + field(2, dim)
    return field(1, name.encode()) + field(2, field(1, tensor))


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 600000
    node = field(1, b"x") + field(2, b"y") + field(4, b"Relu")  # NodeProto input=1 output=2 op_type=4
    parts = [field(1, node), field(2, b"crafted")]              # GraphProto node=1 name=2
    for i in range(n):
        # TensorProto dims=1 (varint), data_type=2, name=8; no raw_data or typed data
        t = vint(1, 1) + vint(2, 1) + field(8, b"init_%012d" % i)
        parts.append(field(5, t))                                # GraphProto initializer=5
    parts.append(field(11, value_info("x")))                    # GraphProto input=11
    parts.append(field(12, value_info("y")))                    # GraphProto output=12
    graph = b"".join(parts)
    model = vint(1, 8) + field(8, field(1, b"") + vint(2, 13)) + field(7, graph)  # ir_version, opset_import, graph
    with open(out, "wb") as f:
        f.write(model)
    print("%s: %d bytes, 1 Relu, %d header-only initializers" % (out, len(model), n))


if __name__ == "__main__":
    main()
