#!/usr/bin/env python3
"""Hostile-input driver for `gpucast analyze`: crafted ONNX graphs (huge,
negative and overflowing dims, zero-size tensors, cycles, nested If,
thousands of inputs, absurd Conv/Pool attributes, external data naming
/etc/passwd or /dev/zero, huge Range/ConstantOfShape/Expand/Tile, --batch
and --dim extremes) plus seeded truncations and bit flips of models/.

Each case runs `gpucast analyze -b B --json FILE` under `timeout`; a case
fails when the process dies of a signal, outlasts the timeout, exits 0 with
nan/inf in its JSON, or exits non-zero without naming the file. Then
`gpucast simulate --json` runs on hostile generic trace CSVs (huge, NaN,
negative and overflowing times and counts, a FIFO, /dev/zero, a directory, a
file name that is not UTF-8) with the same verdicts; then on the simulator's
data files under a scratch GPUCAST_DATA (a copy of links to --data with one
file replaced): the workload table (lucid/single_data.csv: crafted speeds,
utilizations, memories and batch sizes, repeated rows), the named traces'
files (philly, alibaba2023, gavel: their first rows) and the pair table
(lucid/colocate_info.csv), each crafted and mutated (--data-mutations seeded
truncations, bit flips, hostile fields, repeated, dropped and shuffled lines),
`simulate --predictions oracle` (no training), the error expected to name the
replaced file; a crafted value that must be refused (a speed whose step time
overflows, a batch size beyond int, a repeated workload) fails as ACCEPTED
when simulate exits 0.

    tools/fuzz_inputs.py [--gpucast build/gpucast] [--seconds 120] [--seed 1]
                         [--data $GPUCAST_DATA] [--data-mutations 200] [--data-seconds 120]

Needs python3-onnx. Writes cases to a temporary directory only.

This driver runs the CLI only. Hostile HTTP requests to a running `gpucast serve` (the job routes'
fields such as `mig`, the Kubernetes webhook's pods) are tests/hostile_fields.py's, which
tests/hostile_client.sh runs against the services it starts (`--only REGEX` there too).
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper


def vi(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def model(nodes, inputs, outputs, inits=(), opset=17, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def i64(name, vals):
    return helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)


def bare_tensor(name, dims, elem=TensorProto.FLOAT):
    """A TensorProto with dims and no payload (helper.make_tensor checks the size)."""
    t = TensorProto()
    t.name, t.data_type = name, elem
    t.dims.extend(dims)
    return t


def conv_case(**attrs):
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], [0.0] * 108)
    n = helper.make_node("Conv", ["x", "w"], ["y"], **attrs)
    return model([n], [vi("x", ["N", 3, 32, 32])], [vi("y", None)], [w])


def nested_if(depth):
    cond = helper.make_tensor("c", TensorProto.BOOL, [], [True])
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["o0"])], "b0", [], [vi("o0", None)])
    for d in range(depth):
        leaf = helper.make_graph([helper.make_node("Relu", ["x"], [f"e{d}"])], f"e{d}", [], [vi(f"e{d}", None)])
        n = helper.make_node("If", ["c"], [f"o{d+1}"], then_branch=inner, else_branch=leaf)
        inner = helper.make_graph([n], f"b{d+1}", [], [vi(f"o{d+1}", None)])
    return model(list(inner.node), [vi("x", ["N", 8])], [vi(f"o{depth}", None)], [cond])


def crafted():
    """(name, ModelProto or bytes, extra CLI args)"""
    c = []
    relu = lambda dims: model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", dims)], [vi("y", None)])
    c.append(("huge_dims", relu([10**18, 10**18]), []))
    c.append(("int64_overflow_product", relu([2**31, 2**31, 2**31]), []))
    c.append(("negative_dim", relu(["N", -5]), []))
    c.append(("zero_dim", relu(["N", 0, 3]), []))
    mm = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", ["N", 2**40]), vi("w", [2**40, 2**40])],
               [vi("y", None)])
    c.append(("matmul_2e40", mm, []))
    cyc = model([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Add", ["a", "x"], ["b"])],
                [vi("x", ["N", 4])], [vi("a", None)])
    c.append(("cycle", cyc, []))
    selfloop = model([helper.make_node("Relu", ["a"], ["a"])], [vi("x", ["N", 4])], [vi("a", None)])
    c.append(("self_loop", selfloop, []))
    c.append(("nested_if_6", nested_if(6), []))
    c.append(("nested_if_40", nested_if(40), []))
    many = model([helper.make_node("Sum", [f"x{i}" for i in range(5000)], ["y"])],
                 [vi(f"x{i}", ["N", 4]) for i in range(5000)], [vi("y", None)])
    c.append(("inputs_5000", many, []))
    for k, v in [("kernel0", dict(kernel_shape=[0, 0])), ("stride0", dict(strides=[0, 0])),
                 ("group0", dict(group=0)), ("group_neg", dict(group=-3)), ("group_huge", dict(group=2**62)),
                 ("pads_neg", dict(pads=[-100, -100, -100, -100])), ("pads_huge", dict(pads=[2**62] * 4)),
                 ("dilation0", dict(dilations=[0, 0])), ("dilation_huge", dict(dilations=[2**62, 2**62])),
                 ("stride_neg", dict(strides=[-1, -1])), ("kernel_huge", dict(kernel_shape=[2**62, 2**62])),
                 ("pads_short", dict(pads=[1])), ("auto_pad_bad", dict(auto_pad="WHAT"))]:
        c.append(("conv_" + k, conv_case(**v), []))
    for k, v in [("k0", dict(kernel_shape=[0, 0])), ("s0", dict(kernel_shape=[2, 2], strides=[0, 0])),
                 ("khuge", dict(kernel_shape=[2**62, 2**62])), ("padneg", dict(kernel_shape=[2, 2], pads=[-9] * 4)),
                 ("nokernel", dict())]:
        n = helper.make_node("MaxPool", ["x"], ["y"], **v)
        c.append(("maxpool_" + k, model([n], [vi("x", ["N", 3, 32, 32])], [vi("y", None)]), []))
    # Shape-producing ops fed by constants.
    for k, vals in [("huge", [2**40, 2**40]), ("neg", [-7, 4]), ("overflow", [2**62, 2**62, 4])]:
        n = helper.make_node("ConstantOfShape", ["s"], ["y"])
        c.append(("constofshape_" + k, model([n], [vi("x", ["N"])], [vi("y", None)], [i64("s", vals)]), []))
        e = helper.make_node("Expand", ["x", "s"], ["y"])
        c.append(("expand_" + k, model([e], [vi("x", ["N", 1])], [vi("y", None)], [i64("s", vals)]), []))
        r = helper.make_node("Reshape", ["x", "s"], ["y"])
        c.append(("reshape_" + k, model([r], [vi("x", ["N", 4])], [vi("y", None)], [i64("s", vals)]), []))
        t = helper.make_node("Tile", ["x", "s"], ["y"])
        c.append(("tile_" + k, model([t], [vi("x", [2, 2])], [vi("y", None)], [i64("s", vals)]), []))
    r = helper.make_node("Reshape", ["x", "s"], ["y"])
    c.append(("reshape_two_minus1", model([r], [vi("x", ["N", 4])], [vi("y", None)], [i64("s", [-1, -1])]), []))
    c.append(("reshape_zero_into", model([r], [vi("x", ["N", 0])], [vi("y", None)], [i64("s", [-1, 0])]), []))
    rg = helper.make_node("Range", ["a", "b", "d"], ["y"])
    for k, (a, b, d) in [("huge", (0, 2**62, 1)), ("delta0", (0, 10, 0)), ("negcount", (10, 0, 1))]:
        c.append(("range_" + k, model([rg], [vi("x", ["N"])], [vi("y", None)],
                                      [helper.make_tensor(n, TensorProto.INT64, [], [v]) for n, v in
                                       (("a", a), ("b", b), ("d", d))]), []))
    sl = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])
    c.append(("slice_step0", model([sl], [vi("x", ["N", 8])], [vi("y", None)],
                                   [i64("st", [0]), i64("en", [8]), i64("ax", [1]), i64("sp", [0])]), []))
    c.append(("slice_axis_oob", model([sl], [vi("x", ["N", 8])], [vi("y", None)],
                                      [i64("st", [0]), i64("en", [8]), i64("ax", [99]), i64("sp", [1])]), []))
    for op, attrs in [("Transpose", dict(perm=[5, 0])), ("Transpose", dict(perm=[0, 0])),
                      ("Flatten", dict(axis=2**40)), ("Softmax", dict(axis=-99)), ("Gather", dict(axis=99)),
                      ("Split", dict(axis=0, num_outputs=0)), ("Concat", dict(axis=77)),
                      ("ReduceMean", dict(axes=[100])), ("Squeeze", dict()), ("LRN", dict(size=0)),
                      ("Einsum", dict(equation="ab,,->->")), ("Einsum", dict(equation="a" * 200 + "->")),
                      ("DepthToSpace", dict(blocksize=0)), ("SpaceToDepth", dict(blocksize=-1)),
                      ("CumSum", dict()), ("TopK", dict(axis=7)), ("Resize", dict(mode="nope"))]:
        ins = ["x", "x"] if op in ("Gather", "Concat", "Einsum", "CumSum", "TopK", "Resize") else ["x"]
        n = helper.make_node(op, ins, ["y"], **attrs)
        c.append((f"{op.lower()}_{list(attrs.values())[0] if attrs else 'none'}"[:60].replace("/", "_"),
                  model([n], [vi("x", ["N", 3, 4, 4])], [vi("y", None)]), []))
    c.append(("unknown_op", model([helper.make_node("FrobnicateXYZ", ["x"], ["y"])], [vi("x", ["N", 4])],
                                  [vi("y", None)]), []))
    c.append(("unknown_domain", model([helper.make_node("Relu", ["x"], ["y"], domain="evil.domain")],
                                      [vi("x", ["N", 4])], [vi("y", None)]), []))
    c.append(("opset_0", model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 4])], [vi("y", None)],
                               opset=0), []))
    c.append(("opset_huge", model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 4])], [vi("y", None)],
                                  opset=2**62), []))
    c.append(("no_nodes", model([], [vi("x", ["N", 4])], [vi("x", None)]), []))
    c.append(("empty_input_name", model([helper.make_node("Relu", [""], ["y"])], [vi("x", ["N", 4])],
                                        [vi("y", None)]), []))
    c.append(("dup_outputs", model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])],
                                   [vi("x", ["N", 4])], [vi("y", None)]), []))
    wrong_attr = helper.make_node("Conv", ["x", "w"], ["y"])
    wrong_attr.attribute.append(helper.make_attribute("kernel_shape", "3x3"))
    c.append(("conv_attr_string", model([wrong_attr], [vi("x", ["N", 3, 8, 8]), vi("w", [4, 3, 3, 3])],
                                        [vi("y", None)]), []))
    # Weights: external data and declared-but-absent payloads.
    for k, loc, extra in [("passwd", "/etc/passwd", {}), ("dotdot", "../../../../etc/passwd", {}),
                          ("devzero", "/dev/zero", {"length": str(2**40)}), ("proc", "/proc/self/mem", {}),
                          ("offset_huge", "w.bin", {"offset": str(2**62), "length": "16"}),
                          ("length_neg", "w.bin", {"length": "-5"}), ("dir", "/", {})]:
        w = bare_tensor("w", [4, 3, 3, 3])
        w.data_location = TensorProto.EXTERNAL
        for kk, vv in [("location", loc)] + list(extra.items()):
            e = w.external_data.add()
            e.key, e.value = kk, vv
        n = helper.make_node("Conv", ["x", "w"], ["y"])
        c.append(("external_" + k, model([n], [vi("x", ["N", 3, 8, 8])], [vi("y", None)], [w]), []))
    wbig = bare_tensor("w", [2**40, 3, 3, 3])
    c.append(("init_dims_huge_no_data", model([helper.make_node("Conv", ["x", "w"], ["y"])],
                                              [vi("x", ["N", 3, 8, 8])], [vi("y", None)], [wbig]), []))
    wneg = bare_tensor("w", [-4, 3, 3, 3])
    c.append(("init_dims_neg", model([helper.make_node("Conv", ["x", "w"], ["y"])],
                                     [vi("x", ["N", 3, 8, 8])], [vi("y", None)], [wneg]), []))
    # CLI extremes on a sane graph.
    sane = conv_case()
    for b in ["4611686018427387904", "2147483648", "999999999999"]:
        c.append(("batch_" + b, sane, ["-b", b]))
    for d in ["N=-1", "N=0", "N=nan", "N=99999999999999999999", "=3", "N", "N=1e3"]:
        c.append(("dim_" + re.sub(r"\W", "_", d), sane, ["--dim", d]))
    for a in ["loader_workers=nan", "loader_workers=-1", "loader_workers=1e400", "loader_ms_per_sample=inf",
              "loader_ms_per_sample=-5", "env_steps_per_update=0", "data_on_gpu=7", "optimizer=evil", "=1",
              "tf32=nan"]:
        c.append(("attr_" + re.sub(r"\W", "_", a), sane, ["--attr", a]))
    return c


def mutations(models_dir, rng, n):
    files = sorted(f for f in os.listdir(models_dir) if f.endswith(".onnx"))
    files = [f for f in files if os.path.getsize(os.path.join(models_dir, f)) < 120_000]
    out = []
    for i in range(n):
        f = rng.choice(files)
        data = bytearray(open(os.path.join(models_dir, f), "rb").read())
        kind = rng.choice(["truncate", "flip", "flip", "splice"])
        if kind == "truncate":
            data = data[: rng.randrange(len(data))]
        elif kind == "flip":
            for _ in range(rng.randint(1, 8)):
                p = rng.randrange(len(data))
                data[p] ^= 1 << rng.randrange(8)
        else:  # overwrite a run with 0xff (varints that never end, huge lengths)
            p = rng.randrange(len(data))
            data[p: p + rng.randint(1, 12)] = b"\xff" * rng.randint(1, 12)
        out.append((f"mut{i}_{kind}_{f[:-5]}", bytes(data), []))
    return out


BAD_NUM = re.compile(r"\b(nan|-?inf|infinity)\b", re.I)


def run_case(gpucast, path, name, extra, timeout):
    args = [gpucast, "analyze", "--json", "-q", path]
    if "-b" not in extra:
        args += ["-b", "8"]
    args += extra
    t0 = time.time()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return "HANG", f"over {timeout} s"
    dt = time.time() - t0
    base = os.path.basename(path)
    if p.returncode < 0 or p.returncode >= 128:
        return "SIGNAL", f"rc {p.returncode}: {p.stderr.strip()[-300:]}"
    if p.returncode == 0:
        if BAD_NUM.search(p.stdout):
            return "GARBAGE", BAD_NUM.search(p.stdout).group(0)
        return "ok", f"{dt:.1f}s"
    msg = p.stderr.strip()
    if extra and extra[0] in ("--dim", "--attr", "-b"):
        return "error", msg[-200:]
    if base not in msg:
        return "NONAME", msg[-300:]
    return "error", msg[-200:]


def trace_cases(d):
    """(name, path) of hostile generic traces for `gpucast simulate`."""
    head = "submit_s,duration_s,num_gpus\n"
    rows = {
        "span_1e300": "0,100,1\n1e300,100,1\n", "dur_1e300": "0,1e300,1\n", "dur_tiny": "0,1e-300,1\n",
        "nan": "nan,100,1\n", "inf": "0,inf,1\n", "neg": "-5,100,1\n", "gpus_huge": "0,100,4000000000\n",
        "gpus_zero": "0,100,0\n", "id_overflow": "0,100,1\n", "empty_rows": "\n\n", "short": "0,100\n",
        "many_fields": "0,100,1," + ",".join(["9"] * 10000) + "\n",
    }
    out = []
    for name, body in rows.items():
        p = os.path.join(d, f"trace_{name}.csv")
        extra = "job_id," if name == "id_overflow" else ""
        with open(p, "w") as f:
            f.write((extra + head) if extra else head)
            f.write(("99999999999999999999999," + body) if extra else body)
        out.append((f"trace_{name}", p))
    fifo = os.path.join(d, "trace_fifo.csv")
    os.mkfifo(fifo)
    out += [("trace_fifo", fifo), ("trace_devzero", "/dev/zero"), ("trace_dir", d)]
    odd = os.path.join(d.encode(), b"trace_\xff.csv")
    with open(odd, "wb") as f:
        f.write((head + "0,100,1\n").encode())
    out.append(("trace_not_utf8_name", odd))
    return out


def run_simulate(gpucast, path, out_dir, timeout):
    args = [os.fsencode(gpucast), b"simulate", b"--json", b"--quiet", b"--policy", b"slot", b"--trace",
            os.fsencode(path), b"--out", os.fsencode(out_dir)]
    return run_and_classify(args, timeout, (os.path.basename(os.fsdecode(path)), os.fsdecode(path)))


def run_and_classify(args, timeout, names, env=None):
    """Runs a simulate command; HANG, SIGNAL, GARBAGE (a bad number printed on success), ok, or
    error / NONAME (a refusal that names, or does not name, any of `names`)."""
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "HANG", f"over {timeout} s"
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode < 0 or p.returncode >= 128:
        return "SIGNAL", f"rc {p.returncode}: {err[-300:]}"
    if p.returncode == 0:
        m = BAD_NUM.search(p.stdout.decode("utf-8", "replace"))
        return ("GARBAGE", m.group(0)) if m else ("ok", "")
    return ("error" if any(n in err for n in names) else "NONAME"), err[-200:]


# The simulator's data files the driver replaces: (case prefix, path under the
# data dir, trace to simulate, lines of the real file kept (header included; 0 = all)).
SIM_FILES = [
    ("workloads", "lucid/single_data.csv", "philly", 0),
    ("pairs", "lucid/colocate_info.csv", "philly", 0),
    ("philly", "philly/philly.csv", "philly", 300),
    ("alibaba", "alibaba-gpu-v2023/openb_pod_list_default.csv", "alibaba2023", 300),
    ("gavel", "gavel/msr_seed0_6214e9.trace", "gavel", 300),
]
HOSTILE_FIELDS = ["nan", "-nan", "inf", "-inf", "1e999", "-1e999", "4e-320", "0x1p3", "0", "-0", "-1",
                  "4294967328", "99999999999999999999", "1e300", "", " ", "\xff", "2017-13-45 99:99:99",
                  "9223372036854775807", "-9223372036854775808", "1.5", "abc"]


# Crafted simulator data cases that must be refused (exit 0 is the verdict ACCEPTED): a value
# train --data refuses too (a speed whose step overflows, a memory over 1e7 MiB), a batch size
# beyond int, a repeated workload. Filled by workload_cases.
MUST_FAIL = set()
# The values of workload_cases that are valid in their column (the rest must be refused).
VALID_WORKLOAD_FIELDS = {"amp": {"0"}, "speed": {"4294967328", "1e300"}, "gpu_util": {"4e-320", "1e-307", "0"},
                         "gmem": {"4e-320", "1e-307"}}


def workload_cases(header, rows):
    """(name, text) of crafted workload tables: Lucid's rows with one field made hostile."""
    cols = header.split(",")
    out = []
    for col in ["batchsize", "amp", "speed", "gpu_util", "gmem"]:
        i = cols.index(col)
        for v in ["nan", "inf", "-inf", "1e999", "4e-320", "1e-307", "0x1p3", "0", "-5", "4294967328", "1e300", ""]:
            f = rows[0].split(",")
            f[i] = v
            tag = re.sub(r"\W", "_", v) or "empty"
            out.append((f"workloads_{col}_{tag}", "\n".join([header, ",".join(f)] + rows[1:]) + "\n"))
            if v not in VALID_WORKLOAD_FIELDS.get(col, set()):
                MUST_FAIL.add(out[-1][0])
    out.append(("workloads_repeated_row", "\n".join([header] + rows + rows[:1]) + "\n"))
    MUST_FAIL.update({"workloads_repeated_row", "workloads_header_only", "workloads_many_rows"})
    out.append(("workloads_header_only", header + "\n"))
    out.append(("workloads_many_rows", header + "\n" + "".join(f"M{i},D,32,0,10,50,1,100,0\n" for i in range(20000))))
    return out


def text_mutations(prefix, text, rng, n):
    """(name, text) of n seeded mutations of a CSV/TSV text."""
    lines = text.split("\n")
    sep = "\t" if "\t" in lines[0] else ","
    out = []
    for i in range(n):
        kind = rng.choice(["truncate", "flip", "field", "field", "dup", "drop", "shuffle"])
        ls = list(lines)
        if kind == "truncate":
            t = text[: rng.randrange(len(text))]
        elif kind == "flip":
            b = bytearray(text.encode())
            for _ in range(rng.randint(1, 8)):
                p = rng.randrange(len(b))
                b[p] ^= 1 << rng.randrange(8)
            t = b.decode("latin-1")
        elif kind == "field":
            for _ in range(rng.randint(1, 3)):
                li = rng.randrange(1, max(2, len(ls) - 1))
                f = ls[li].split(sep)
                f[rng.randrange(len(f))] = rng.choice(HOSTILE_FIELDS)
                ls[li] = sep.join(f)
            t = "\n".join(ls)
        elif kind == "dup":
            li = rng.randrange(1, max(2, len(ls) - 1))
            ls[li:li] = [ls[li]] * rng.randint(1, 3)
            t = "\n".join(ls)
        elif kind == "drop":
            del ls[rng.randrange(len(ls))]
            t = "\n".join(ls)
        else:
            body = ls[1:]
            rng.shuffle(body)
            t = "\n".join(ls[:1] + body)
        out.append((f"{prefix}_mut{i}_{kind}", t))
    return out


def sim_data_cases(data, rng, n):
    """(name, relative path, trace, text) of replaced simulator data files."""
    out = []
    for prefix, rel, trace, keep in SIM_FILES:
        with open(os.path.join(data, rel), encoding="latin-1") as f:
            text = f.read()
        if keep:
            text = "\n".join(text.split("\n")[:keep]) + "\n"
        crafted = workload_cases(text.split("\n")[0], [r for r in text.split("\n")[1:] if r]) if prefix == "workloads" else []
        crafted.append((f"{prefix}_empty", ""))
        crafted.append((f"{prefix}_long_line", text.split("\n")[0] + "\n" + "9," * 200000 + "\n"))
        for name, t in crafted + text_mutations(prefix, text, rng, n):
            out.append((name, rel, trace, t))
    return out


def scratch_data(root, data, rel, text):
    """A data dir at root: links to every entry of data, rel's directory a real one holding text as rel."""
    if os.path.exists(root):
        subprocess.run(["rm", "-rf", root], check=True)
    os.makedirs(root)
    sub = rel.split("/")[0]
    for e in os.listdir(data):
        if e != sub:
            os.symlink(os.path.join(data, e), os.path.join(root, e))
    os.makedirs(os.path.join(root, sub))
    for e in os.listdir(os.path.join(data, sub)):
        if os.path.join(sub, e) != rel:
            os.symlink(os.path.join(data, sub, e), os.path.join(root, sub, e))
    with open(os.path.join(root, rel), "w", encoding="latin-1") as f:
        f.write(text)


def run_sim_data(gpucast, data_root, rel, trace, out_dir, timeout):
    args = [gpucast, "simulate", "--json", "--quiet", "--policy", "slot,predictive", "--predictions", "oracle",
            "--trace", trace, "--jobs", "200", "--seeds", "1", "--out", out_dir]
    return run_and_classify(args, timeout, (os.path.basename(rel),), env=dict(os.environ, GPUCAST_DATA=data_root))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpucast", default="build/gpucast")
    ap.add_argument("--models", default="models")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--only", default="", help="regex of case names")
    ap.add_argument("--mutations", type=int, default=200)
    ap.add_argument("--data", default=os.environ.get("GPUCAST_DATA", "../shared/data"),
                    help="the real data dir the simulator's data-file cases start from")
    ap.add_argument("--data-mutations", type=int, default=200,
                    help="seeded mutations of each simulator data file (0: crafted cases only)")
    ap.add_argument("--data-seconds", type=float, default=120,
                    help="time budget of the simulator data-file cases (--seconds is the ONNX cases')")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    cases = crafted() + mutations(a.models, rng, a.mutations)
    if a.only:
        cases = [c for c in cases if re.search(a.only, c[0])]
    bad = ran = 0
    with tempfile.TemporaryDirectory() as d:
        if not a.only or re.search(a.only, "trace_"):
            for name, path in trace_cases(d):
                verdict, detail = run_simulate(a.gpucast, path, os.path.join(d, "sim_out"), a.timeout)
                ran += 1
                if verdict not in ("ok", "error"):
                    bad += 1
                print(f"{verdict:8} {name:40} {detail}".replace("\n", " | "))
        if os.path.isdir(a.data):
            sim_rng = random.Random(a.seed * 7919 + 1)
            data_deadline = time.time() + a.data_seconds
            data_ran = 0
            cases_data = sim_data_cases(a.data, sim_rng, a.data_mutations)
            # Crafted cases first, then the files' mutations interleaved, so a budget cut spares every file some.
            crafted_data = [c for c in cases_data if "_mut" not in c[0]]
            muts = [c for c in cases_data if "_mut" in c[0]]
            muts.sort(key=lambda c: int(re.search(r"_mut(\d+)_", c[0]).group(1)))
            for name, rel, trace, text in crafted_data + muts:
                if a.only and not re.search(a.only, name):
                    continue
                if time.time() > data_deadline:
                    print(f"-- simulator data cases stopped at the {a.data_seconds:.0f} s budget")
                    break
                root = os.path.join(d, "data")
                scratch_data(root, a.data, rel, text)
                verdict, detail = run_sim_data(a.gpucast, root, rel, trace, os.path.join(d, "sim_out"), a.timeout)
                if verdict == "ok" and name in MUST_FAIL:
                    verdict, detail = "ACCEPTED", "exit 0 on a value that must be refused"
                ran += 1
                if verdict not in ("ok", "error"):
                    bad += 1
                data_ran += 1
                if verdict not in ("ok", "error") or "_mut" not in name:
                    print(f"{verdict:8} {name:40} {detail}".replace("\n", " | "))
            print(f"-- {data_ran} simulator data-file case(s) run")
        else:
            print(f"-- no data dir {a.data}: the simulator's data-file cases skipped")
        deadline = time.time() + a.seconds
        for name, m, extra in cases:
            if time.time() > deadline:
                print(f"-- stopped at the {a.seconds:.0f} s budget")
                break
            path = os.path.join(d, name + ".onnx")
            with open(path, "wb") as f:
                f.write(m if isinstance(m, bytes) else m.SerializeToString())
            verdict, detail = run_case(a.gpucast, path, name, extra, a.timeout)
            ran += 1
            if verdict not in ("ok", "error"):
                bad += 1
            if verdict not in ("ok", "error") or not name.startswith("mut"):
                print(f"{verdict:8} {name:40} {detail}".replace("\n", " | "))
    print(f"{ran} case(s) run, {bad} failing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
