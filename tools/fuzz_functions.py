#!/usr/bin/python3
"""Structure-aware fuzzing of the ONNX model-local function inliner (src/graph/onnx_functions.cc).

Generates seeded, reproducible models with ModelProto.functions and runs each through
`gpucast analyze FILE --batch 4 --json` (meant for the ASan/UBSan build, build-asan/gpucast)
under `timeout` and `/usr/bin/time -v`:

  - random call graphs between functions: cycles, self-calls (also through overloads), diamonds,
    deep chains, fan-out (2^k expansion);
  - ref_attr_name naming a missing attribute or one of the wrong type (ints, string, graph,
    tensor), with and without defaults;
  - FunctionProto.attribute_proto (field 11, an unknown field to libonnx 1.12) and the overload
    fields (NodeProto 8, FunctionProto 13) written as raw protobuf bytes: malformed, truncated,
    wrong wire type, not UTF-8;
  - functions with zero or thousands of inputs/outputs, outputs never produced, inputs used as
    outputs, duplicated formal names, names colliding with graph names and with the
    '<caller>/<name>' scheme, empty and non-UTF-8 names;
  - functions importing other opset versions/domains (negative, huge), calls of domain 'ai.onnx'
    vs '' vs a custom one, calls inside If/Loop bodies, functions whose bodies hold If/Loop;
  - byte flips, truncations and splices of the real exports in models/functions/.

A case fails when the process dies of a signal, outlasts --timeout, prints a sanitizer report
(AddressSanitizer, LeakSanitizer, "runtime error:"), exits non-zero without naming the file,
exits 0 with output that is not JSON, takes more than --slow seconds, or its peak RSS exceeds
--rss-mb (both per MB of file plus one: a plain 40,000-node graph of 1.3 MB already takes 2 s and
190 MB without sanitizers, in the stages after inlining). Each failure is printed with its file
(kept under --keep) and reason; the exit status is 1 when any case failed.

--slow and --timeout are seconds of a release build. A binary other than --baseline (a sanitized
or Debug build) is slower at everything, not only at inlining: the Debug ASan build took 12.5-18.8 s
for gen_wide's 40,000-call cases, and as long for the same graph written without functions, where
the release build takes 2.3 s either way. So before the cases both binaries analyse one reference
model, a plain chain of 40,000 Relu nodes (gen_wide's largest case once inlined, without
functions), back to back, and both bounds are multiplied by the ratio of their times (at least 1;
printed as "slowdown"): a case fails as slow when it is slower than the release bound by more than
the build is slower on a plain graph. --slowdown F gives the factor instead of measuring it.
Whether the binary is sanitized (an __asan_init or __ubsan_handle symbol in it) is printed; a
sanitized binary without a --baseline to compare is refused unless --slowdown is given. Peak RSS
is not scaled (--rss-mb).

usage: /usr/bin/python3 tools/fuzz_functions.py [--gpucast build-asan/gpucast] [--seed 1]
           [--cases 400] [--seconds 600] [--timeout 20] [--slow 5] [--rss-mb 400] [--keep DIR]
           [--baseline build/gpucast] [--slowdown F]
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


# ---------------------------------------------------------------- raw protobuf helpers

def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


class Raw(bytes):
    """Serialized bytes that python's protobuf refuses to parse (malformed on purpose)."""

    def SerializeToString(self):  # noqa: N802 - the protobuf message's name
        return bytes(self)


def with_unknown(msg, extra):
    """msg re-parsed with raw bytes appended (fields libonnx 1.12 does not know), or Raw bytes."""
    b = msg.SerializeToString() + extra
    out = type(msg)()
    try:
        out.ParseFromString(b)
    except Exception:  # noqa: BLE001 - python protobuf's DecodeError differs by implementation
        return Raw(b)
    return out


def vi(name, dims=(4, 8)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def opset(d, v):
    return helper.make_opsetid(d, v)


def model(nodes, functions, inputs=("X",), outputs=("Y",), opsets=None, inits=()):
    g = helper.make_graph(nodes, "g", [vi(i) for i in inputs], [vi(o) for o in outputs],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=opsets or [opset("", 17), opset("custom", 1)])
    m.ir_version = 8
    m.functions.extend(f for f in functions if not isinstance(f, Raw))
    raws = [f for f in functions if isinstance(f, Raw)]
    if raws:  # ModelProto.functions is field 25
        b = m.SerializeToString() + b"".join(ld(25, f) for f in raws)
        return Raw(b)
    return m


def function(name, inputs, outputs, nodes, domain="custom", opsets=None, attributes=(), extra=b""):
    f = helper.make_function(domain, name, list(inputs), list(outputs), nodes,
                             opsets or [opset("", 17)], list(attributes))
    return with_unknown(f, extra) if extra else f


def call(op, inputs, outputs, domain="custom", name=None, extra=b"", **attrs):
    n = helper.make_node(op, list(inputs), list(outputs), name=name, domain=domain, **attrs)
    return with_unknown(n, extra) if extra else n


def ref_attr(name, ref, typ=onnx.AttributeProto.FLOAT):
    a = onnx.AttributeProto()
    a.name = name
    a.ref_attr_name = ref
    a.type = typ
    return a


def rand_bytes(r, n):
    return bytes(r.randrange(256) for _ in range(n))


# ---------------------------------------------------------------- generators
# Each returns bytes of a model file; all randomness from `r`.

def gen_call_graph(r):
    """Random call graph among k functions: cycles, self-calls, diamonds, chains, fan-out."""
    k = r.randint(1, 10)
    dom = r.choice(["custom", "", "ai.onnx"])
    names = ["F%d" % i for i in range(k)]
    acyclic = r.random() < 0.5
    fan = r.choice([1, 1, 2, 3])
    funcs = []
    for i, nm in enumerate(names):
        nodes, cur = [], "x"
        for j in range(r.randint(0, 4)):
            if r.random() < 0.6 and k > 1 or (not acyclic and r.random() < 0.3):
                lo = i + 1 if acyclic else 0
                if lo >= k:
                    continue
                for _ in range(fan):
                    tgt = names[r.randrange(lo, k)]
                    out = "v%d_%d" % (j, len(nodes))
                    nodes.append(call(tgt, [cur], [out], domain=r.choice([dom, "ai.onnx" if dom == "" else dom]),
                                      name=r.choice(["", "n%d" % j, "n"])))
                cur = out
            else:
                out = "v%d_%d" % (j, len(nodes))
                nodes.append(helper.make_node(r.choice(["Relu", "Sigmoid", "Tanh"]), [cur], [out],
                                              name=r.choice(["", "r", "r%d" % j])))
                cur = out
        if cur == "x" and r.random() < 0.5:
            nodes.append(helper.make_node("Identity", ["x"], ["y"]))
        elif nodes:
            nodes[-1].output[0] = "y"
            cur = "y"
        outs = ["y"] if nodes else ["x"]
        funcs.append(function(nm, ["x"], outs, nodes, domain=dom,
                              opsets=[opset("", 17)] + ([opset("custom", 1)] if dom == "custom" else [])))
    calls = []
    cur = "X"
    for j in range(r.randint(1, 3)):
        out = "Y" if j == 2 else "h%d" % j
        calls.append(call(r.choice(names), [cur], [out], domain=dom, name=r.choice(["", "c", "c%d" % j])))
        cur = out
    calls[-1].output[0] = "Y"
    return model(calls, funcs).SerializeToString()


def gen_deep_chain(r):
    """A chain of depth d around the 32-level bound, optionally fanning out 2 at each level."""
    d = r.choice([30, 31, 32, 33, 40, 200])
    fan = r.choice([1, 2])
    funcs = []
    for i in range(d):
        if i == d - 1:
            nodes = [helper.make_node("Relu", ["x"], ["y"])]
        else:
            nodes = [call("F%d" % (i + 1), ["x"], ["t%d" % j if j < fan - 1 else "y"]) for j in range(fan)]
            if fan == 2:
                nodes[1].input[0] = "t0"
        funcs.append(function("F%d" % i, ["x"], ["y"], nodes, opsets=[opset("", 17), opset("custom", 1)]))
    r.shuffle(funcs)
    return model([call("F0", ["X"], ["Y"], name="top" * r.choice([1, 1000]))], funcs).SerializeToString()


def gen_overload(r):
    """Overload strings on calls and functions: self-calls through overloads, mismatches, bytes."""
    ovs = [b"", b"a", b"b", b"\xff\xfe", b"a" * 1000, rand_bytes(r, r.randint(0, 8))]
    funcs = []
    for i in range(r.randint(1, 4)):
        ov = r.choice(ovs)
        tgt_ov = r.choice(ovs)
        body = [call("F", ["x"], ["y"], extra=ld(8, tgt_ov) if tgt_ov else b"")] if r.random() < 0.6 else \
            [helper.make_node("Relu", ["x"], ["y"])]
        extra = ld(13, ov) if ov else b""
        if r.random() < 0.2:
            extra += varint(13 << 3 | 0) + varint(r.randrange(1 << 20))  # overload as a varint
        funcs.append(function("F", ["x"], ["y"], body, opsets=[opset("", 17), opset("custom", 1)], extra=extra))
    top_ov = r.choice(ovs)
    extra = ld(8, top_ov) if top_ov else b""
    if r.random() < 0.2:
        extra += varint(8 << 3 | 5) + b"\x00\x00\x00\x00"  # fixed32 field 8
    return model([call("F", ["X"], ["Y"], name="c", extra=extra)], funcs).SerializeToString()


def _attr_values(r):
    kind = r.randrange(7)
    if kind == 0:
        return helper.make_attribute("alpha", 0.25)
    if kind == 1:
        return helper.make_attribute("alpha", [1, 2, 3])
    if kind == 2:
        return helper.make_attribute("alpha", b"\xff" if r.random() < 0.5 else "str")
    if kind == 3:
        return helper.make_attribute("alpha", helper.make_graph([], "sub", [], []))
    if kind == 4:
        return helper.make_attribute("alpha", helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0]))
    if kind == 5:
        a = helper.make_attribute("alpha", 3)
        a.type = onnx.AttributeProto.FLOAT  # says FLOAT, holds an int
        return a
    a = onnx.AttributeProto()
    a.name = "alpha"  # no type, no value
    return a


def gen_ref_attr(r):
    """ref_attr_name to missing/wrong-typed attributes; defaults (field 11) right, wrong or malformed."""
    ref = r.choice(["slope", "missing", "", "alpha"])
    op = r.choice(["LeakyRelu", "Gemm", "Conv", "Transpose", "Cast", "Reshape", "Softmax"])
    body_attrs = [ref_attr(r.choice(["alpha", "perm", "to", "axis", "kernel_shape", "pads", "transA"]), ref,
                           r.choice([onnx.AttributeProto.FLOAT, onnx.AttributeProto.INTS,
                                     onnx.AttributeProto.INT, onnx.AttributeProto.GRAPH]))]
    ins = {"Gemm": ["x", "x"], "Conv": ["x", "x"], "Reshape": ["x", "x"]}.get(op, ["x"])
    n = helper.make_node(op, ins, ["y"])
    n.attribute.extend(body_attrs)
    extra = b""
    for _ in range(r.randint(0, 3)):
        d = _attr_values(r)
        d.name = r.choice([ref, "slope", "alpha", ""])
        blob = d.SerializeToString()
        m = r.randrange(6)
        if m == 1:
            blob = blob[:r.randrange(len(blob) + 1)]
        elif m == 2:
            blob = rand_bytes(r, r.randint(0, 40))
        if m == 3:
            extra += varint(11 << 3 | 0) + varint(r.randrange(1 << 30))  # field 11 as a varint
        elif m == 4 and r.random() < 0.3:
            extra += varint(11 << 3 | 2) + varint(len(blob) + 5) + blob  # length past the end
        else:
            extra += ld(11, blob)
    f = function("F", ["x"], ["y"], [n], extra=extra)
    call_attrs = {}
    c = call("F", ["X"], ["Y"], name="c")
    for _ in range(r.randint(0, 2)):
        a = _attr_values(r)
        a.name = r.choice([ref, "slope", "other"])
        c.attribute.append(a)
    del call_attrs
    return model([c], [f]).SerializeToString()


def gen_io_shapes(r):
    """Zero or thousands of inputs/outputs, unproduced outputs, pass-through, duplicates, empty names."""
    nin = r.choice([0, 1, 2, 3000])
    nout = r.choice([0, 1, 2, 3000])
    ins = ["i%d" % i for i in range(nin)]
    outs = ["o%d" % i for i in range(nout)]
    nodes = []
    mode = r.randrange(6)
    for j, o in enumerate(outs):
        if mode == 0 and ins:  # produced from an input
            nodes.append(helper.make_node("Relu", [ins[j % len(ins)]], [o]))
        elif mode == 1 and ins:  # pass-through: output is an input
            outs[j] = ins[j % len(ins)]
        elif mode == 2:  # never produced
            pass
        elif mode == 3 and ins:  # body writes an input
            nodes.append(helper.make_node("Relu", [ins[0]], [ins[j % len(ins)]]))
        elif mode == 4:
            nodes.append(helper.make_node("Constant", [], [o], value_float=1.0))
        else:
            nodes.append(helper.make_node("Relu", [r.choice(ins + ["nowhere", ""])], [o]))
    if r.random() < 0.2 and ins:
        ins.append(ins[0])  # duplicated formal input
    if r.random() < 0.2 and outs:
        outs.append(outs[0])
    if r.random() < 0.2:
        ins.insert(0, "")
    f = function("F", ins, outs, nodes)
    cin = r.choice([[], ["X"], ["X"] * max(1, nin), ["X"] * (nin + 1), ["", "X"]])
    cout = r.choice([["Y"], ["Y"] + ["z%d" % i for i in range(max(0, nout - 1))], [], ["Y", "Y"], ["", "Y"]])
    graph_nodes = [call("F", cin, cout, name="c")]
    if "Y" not in cout:
        graph_nodes.append(helper.make_node("Relu", ["X"], ["Y"]))
    return model(graph_nodes, [f]).SerializeToString()


def gen_names(r):
    """Names colliding with graph names, the '<caller>/<name>' scheme, empty, non-UTF-8, huge."""
    cname = r.choice(["c", "", "c/x", "Y", "X", "\u00e9", "c" * 100000])
    inner = r.choice(["t", "c/t", "", "Y", "X", "t_2", "Relu_0"])
    body = [helper.make_node("Relu", ["x"], [inner or "t"], name=r.choice(["", "r", "c/r", "r"])),
            helper.make_node("Relu", [inner or "t"], ["y"], name=r.choice(["", "r", "c/r_2"]))]
    f = function("F", ["x"], ["y"], body)
    gn = []
    for k in range(r.randint(1, 40)):
        gn.append(call("F", ["X" if k == 0 else "h%d" % (k - 1)], ["h%d" % k], name=cname))
    gn[-1].output[0] = "Y"
    # graph names on the scheme's path
    gn.insert(0, helper.make_node("Relu", ["X"], [r.choice(["c/t", "c/t_2", "c/r", "unused"])],
                                  name=r.choice(["c/r", "c/Relu_0", "c/r_2"])))
    m = model(gn, [f])
    b = m.SerializeToString()
    if r.random() < 0.3:  # a non-UTF-8 byte in one of the function's names
        target = r.choice([b'"\x01t', b"\x01x", b"\x01y"])
        b = b.replace(target, target[:-1] + b"\xff", 1)
    return b


def gen_opsets(r):
    """Functions importing other versions/domains; calls of domain ai.onnx vs '' vs custom."""
    fdom = r.choice(["", "ai.onnx", "custom", "com.microsoft", "x" * 300])
    cdom = fdom if r.random() < 0.5 else r.choice(["", "ai.onnx", "custom"])
    fops = [opset(r.choice(["", "ai.onnx", "custom", "com.microsoft", "other"]),
                  r.choice([-5, 0, 1, 11, 13, 17, 18, 21, 2 ** 62])) for _ in range(r.randint(0, 3))]
    op = r.choice(["Relu", "Softmax", "ReduceSum", "Split", "Unknown", "F"])
    body = [helper.make_node(op, ["x"], ["y"], domain=r.choice(["", "ai.onnx", "other", "com.microsoft"]))]
    f = function("F", ["x"], ["y"], body, domain=fdom, opsets=fops)
    mops = [opset("", r.choice([11, 13, 17, 18]))]
    if r.random() < 0.5:
        mops.append(opset(r.choice(["custom", "other", "ai.onnx"]), r.choice([1, 2, -1])))
    return model([call("F", ["X"], ["Y"], domain=cdom, name="c")], [f], opsets=mops).SerializeToString()


def gen_subgraphs(r):
    """Calls inside If/Loop bodies, and function bodies holding If/Loop that read body values."""
    then_g = helper.make_graph([call("F", ["X" if r.random() < 0.5 else "x"], ["t"], name="inner")], "then",
                               [], [vi("t")])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [], [vi("e")])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
    if_node = helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g, name="if")
    f_inner = function("F", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])])
    f_if = function("G", ["x", "cond"], ["y"], [if_node])
    if r.random() < 0.5:
        body = helper.make_graph([call(r.choice(["F", "G"]), ["x"], ["y2"], name="lc"),
                                  helper.make_node("Identity", ["c_in"], ["c_out"])], "loop",
                                 [vi("i", []), vi("c_in", [])], [vi("c_out", []), vi("y2")])
        loop = helper.make_node("Loop", ["", ""], ["c_fin", "ys"], body=body, name="loop")
        f_if = function("G", ["x", "cond"], ["y"], [loop, helper.make_node("Relu", ["x"], ["y"])])
    top = [call(r.choice(["G", "F"]), ["X", "cond"] if r.random() < 0.7 else ["X"], ["Y"], name="c")]
    if r.random() < 0.3:  # a call of F only inside a graph-level If
        top = [helper.make_node("If", ["cond"], ["Y"], then_branch=then_g, else_branch=then_g, name="gif")]
    return model(top, [f_inner, f_if], inits=[cond]).SerializeToString()


def gen_wide(r):
    """Big-but-legal shapes: a body of many nodes called many times, near the node/byte bounds."""
    n_body = r.choice([1, 100, 2000])
    n_calls = r.choice([1, 30, 1000, 40000])
    body = [helper.make_node("Relu", ["x"], ["t0"])]
    for i in range(1, n_body):
        body.append(helper.make_node("Relu", ["t%d" % (i - 1)], ["t%d" % i]))
    body[-1].output[0] = "y"
    if n_body == 1:
        body[0].output[0] = "y"
    f = function("F", ["x"], ["y"], body)
    empty = function("E", [], [], [])
    calls = []
    cur = "X"
    for k in range(n_calls):
        if r.random() < 0.1:
            calls.append(call("E", [], [], name="e%d" % k))
        out = "h%d" % k
        calls.append(call("F", [cur], [out], name=r.choice(["c", "c%d" % k, ""])))
        cur = out
    calls[-1].output[0] = "Y"
    return model(calls, [f, empty]).SerializeToString()


def gen_quadratic(r):
    """Shapes that are cheap to write and were costly to inline: many copies of one opset import
    against many body nodes; many ref_attr_name references against a call of many attributes;
    many outputs of one body node; a long call name through a deep chain."""
    kind = r.randrange(4)
    if kind == 0:
        n, k = r.choice([(3000, 3000), (6000, 6000)])
        body = [helper.make_node("Relu", ["x" if i == 0 else "t%d" % (i - 1)], ["y" if i == n - 1 else "t%d" % i])
                for i in range(n)]
        f = function("F", ["x"], ["y"], body, opsets=[opset("", 16)] * k)
        return model([call("F", ["X"], ["Y"], name="c")], [f]).SerializeToString()
    if kind == 1:
        n = r.choice([10000, 30000])
        body = helper.make_node("LeakyRelu", ["x"], ["y"])
        body.attribute.extend(ref_attr("b%06d" % i, "r%06d" % i) for i in range(n))
        c = call("F", ["X"], ["Y"], name="c")
        c.attribute.extend(helper.make_attribute("a%06d" % i, 1) for i in range(n))
        return model([c], [function("F", ["x"], ["y"], [body])]).SerializeToString()
    if kind == 2:
        n = r.choice([1000, 20000])
        body = [helper.make_node("Split", ["x"], ["y"] + ["s%d" % i for i in range(n)])]
        return model([call("F", ["X"], ["Y"], name="c")],
                     [function("F", ["x"], ["y"], body)]).SerializeToString()
    d = 32
    funcs = [function("F%d" % i, ["x"], ["y"],
                      [call("F%d" % (i + 1), ["x"], ["y"], name="n" * 1000)] if i < d - 1 else
                      [helper.make_node("Relu", ["x"], ["y"], name="r" * 1000)]) for i in range(d)]
    return model([call("F0", ["X"], ["Y"], name="c" * r.choice([1000, 100000]))], funcs).SerializeToString()


def load_exports():
    out = []
    d = os.path.join(REPO, "models", "functions")
    for name in sorted(os.listdir(d)):
        if name.endswith(".onnx"):
            with open(os.path.join(d, name), "rb") as fh:
                out.append(fh.read())
    return out


EXPORTS = []


def gen_mutate_export(r):
    """Byte flips, truncations, splices of the real torch exports (with functions)."""
    base = bytearray(EXPORTS[0] if len(EXPORTS) == 1 else r.choice(EXPORTS))
    m = r.randrange(4)
    if m == 0:
        for _ in range(r.randint(1, 20)):
            i = r.randrange(len(base))
            base[i] ^= 1 << r.randrange(8)
    elif m == 1:
        base = base[:r.randrange(len(base))]
    elif m == 2:
        i, j = sorted(r.randrange(len(base)) for _ in range(2))
        base[i:i] = base[i:j]
    else:  # structured: mutate the functions of the parsed export
        mp = onnx.ModelProto()
        mp.ParseFromString(bytes(base))
        for f in mp.functions:
            for n in f.node:
                if r.random() < 0.2:
                    n.op_type = r.choice([g.name for g in mp.functions] + ["Relu"])
                    n.domain = r.choice([f.domain, "", "__main__"])
                for a in n.attribute:
                    if a.ref_attr_name and r.random() < 0.5:
                        a.ref_attr_name = r.choice(["", "nope", a.ref_attr_name])
            if r.random() < 0.3 and f.output:
                f.output[0] = r.choice(["", "ghost", f.input[0] if f.input else "x"])
        base = bytearray(mp.SerializeToString())
    return bytes(base)


GENERATORS = [gen_call_graph, gen_deep_chain, gen_overload, gen_ref_attr, gen_io_shapes, gen_names,
              gen_opsets, gen_subgraphs, gen_wide, gen_mutate_export, gen_quadratic]


# ---------------------------------------------------------------- runner

SAN_RE = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer")


def sanitized(binary):
    """Whether `binary` was built with ASan or UBSan: their runtime's entry symbols are in it."""
    import mmap
    with open(binary, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return m.find(b"__asan_init") >= 0 or m.find(b"__ubsan_handle") >= 0


def reference_model():
    """A plain chain of 40,000 Relu nodes: gen_wide's largest case once inlined, without functions."""
    n = 40000
    nodes = [helper.make_node("Relu", ["X" if i == 0 else "h%d" % (i - 1)], ["Y" if i == n - 1 else "h%d" % i],
                              name="c%d" % i) for i in range(n)]
    return model(nodes, []).SerializeToString()


def time_reference(binary, path, env):
    t0 = time.monotonic()
    p = subprocess.run([binary, "analyze", path, "--batch", "4", "--json"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=env)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s analyze %s: exit %d: %s" % (binary, path, p.returncode, p.stderr.decode("utf-8", "replace")))
    return wall


def case_env():
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


def slowdown(args, out_dir):
    """The factor --slow and --timeout are scaled by (see the module's doc), and a line saying why."""
    san = sanitized(args.gpucast)
    what = "sanitized" if san else "not sanitized"
    if args.slowdown is not None:
        return args.slowdown, "%s (%s): slowdown %.2f (--slowdown)" % (args.gpucast, what, args.slowdown)
    base = args.baseline
    if not base or not os.path.exists(base) or os.path.samefile(base, args.gpucast):
        if san:
            sys.exit("%s is sanitized: give --baseline RELEASE_BINARY (default build/gpucast, not found) to measure "
                     "how much slower it is, or --slowdown F" % args.gpucast)
        return 1.0, "%s (%s): slowdown 1 (no other --baseline)" % (args.gpucast, what)
    if sanitized(base):
        sys.exit("--baseline %s is sanitized: want a release build" % base)
    path = os.path.join(out_dir, "reference_plain_40000.onnx")
    with open(path, "wb") as fh:
        fh.write(reference_model())
    env = case_env()
    t_base = time_reference(base, path, env)
    t_bin = time_reference(args.gpucast, path, env)
    f = max(1.0, t_bin / t_base)
    return f, "%s (%s): slowdown %.2f (a plain 40,000-node graph: %.1f s, %s: %.1f s)" % (
        args.gpucast, what, f, t_bin, base, t_base)


def run_case(args, path):
    env = case_env()
    cmd = ["/usr/bin/time", "-v", "timeout", "-s", "KILL", "%.1f" % (args.timeout * args.factor), args.gpucast,
           "analyze", path, "--batch", "4", "--json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    wall = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace")
    rss = 0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    if m:
        rss = int(m.group(1)) // 1024
    sig = re.search(r"Command terminated by signal (\d+)", err)
    rc = p.returncode
    reasons = []
    if sig or rc == 137 or rc == 124:
        reasons.append("killed/timeout (rc %d, %s)" % (rc, sig.group(0) if sig else "no signal line"))
    if SAN_RE.search(err):
        reasons.append("sanitizer: " + SAN_RE.search(err).group(0))
    if rc != 0 and not reasons and path not in err:
        reasons.append("exit %d without naming the file: %r" % (rc, err[-300:]))
    if rc == 0:
        try:
            json.loads(p.stdout.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            reasons.append("exit 0 but output is not JSON: %s" % e)
    size_mb = os.path.getsize(path) / 2 ** 20
    if wall > args.slow * args.factor * (1 + size_mb):
        reasons.append("slow: %.1f s for %.2f MB (bound %.1f s)" %
                       (wall, size_mb, args.slow * args.factor * (1 + size_mb)))
    if rss > args.rss_mb * (1 + size_mb):
        reasons.append("peak RSS %d MB for %.2f MB" % (rss, size_mb))
    return rc, wall, rss, reasons, err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpucast", default="build-asan/gpucast")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seconds", type=float, default=600, help="stop generating after this long")
    ap.add_argument("--timeout", type=float, default=20, help="seconds of a release build, times the slowdown")
    ap.add_argument("--slow", type=float, default=5,
                    help="seconds per MB of file (plus one) of a release build, times the slowdown, over which a "
                         "case fails as slow")
    ap.add_argument("--baseline", default=os.path.join(REPO, "build", "gpucast"),
                    help="the release binary the slowdown of --gpucast is measured against (default: build/gpucast)")
    ap.add_argument("--slowdown", type=float, default=None,
                    help="the factor --slow and --timeout are multiplied by, instead of measuring it")
    ap.add_argument("--rss-mb", type=float, default=400, help="peak RSS over which a case fails")
    ap.add_argument("--only", default="", help="regex of generator names")
    ap.add_argument("--keep", default="", help="directory for the case files (default: a temporary one)")
    args = ap.parse_args()
    EXPORTS.extend(load_exports())
    out_dir = args.keep or tempfile.mkdtemp(prefix="fuzz_functions.")
    os.makedirs(out_dir, exist_ok=True)
    args.factor, line = slowdown(args, out_dir)
    print(line, flush=True)
    gens = [g for g in GENERATORS if re.search(args.only, g.__name__)]
    start = time.monotonic()
    failures, stats, ran = [], {}, 0
    for i in range(args.cases):
        if time.monotonic() - start > args.seconds:
            break
        gen = gens[i % len(gens)]
        r = random.Random("%d/%d" % (args.seed, i))
        data = gen(r)
        path = os.path.join(out_dir, "case%04d_%s.onnx" % (i, gen.__name__[4:]))
        with open(path, "wb") as fh:
            fh.write(data)
        rc, wall, rss, reasons, err = run_case(args, path)
        ran += 1
        s = stats.setdefault(gen.__name__, {"n": 0, "ok": 0, "err": 0, "max_s": 0.0, "max_rss_mb": 0})
        s["n"] += 1
        s["ok" if rc == 0 else "err"] += 1
        s["max_s"] = max(s["max_s"], round(wall, 2))
        s["max_rss_mb"] = max(s["max_rss_mb"], rss)
        if reasons:
            failures.append(path)
            last = [line for line in err.splitlines() if line and not line.startswith("\t")][:3]
            print("FAIL %s (%d bytes): %s | %s" % (path, len(data), "; ".join(reasons), " / ".join(last)[:400]),
                  flush=True)
    for name, s in stats.items():
        print("%-20s %s" % (name, json.dumps(s)))
    print("%d cases (seed %d) in %.0f s, %d failed; files in %s" %
          (ran, args.seed, time.monotonic() - start, len(failures), out_dir))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
