#!/usr/bin/python3
"""Scale probe: models at gpucast's own load limits, timed through `gpucast analyze` and `gpucast predict`.

A crafted model must never stall gpucast (a Slurm submission or the service waits on `gpucast
predict`), so every stage after the limits (src/graph/load_limits.h: max_nodes 50,000, max_entries
200,000, max_graph_bytes 16 MiB) has to be about linear in the file. This script builds one model
per cheap pattern at the node limit (long chains of each cheap op, fan-out of one tensor, nodes of
50,000 inputs or outputs, 50,000 graph inputs / outputs / initializers / value_info entries, long,
missing and repeated names, unknown ops and custom domains, model-local functions called many times,
shape-arithmetic chains that shape_fold folds, weights built by chains of free ops, If chains, high
ranks, many attributes and opset imports) with onnx.helper, runs

    gpucast analyze FILE --batch 2 --json
    gpucast predict -p PREDICTOR -m FILE -b 2 --json

on each under a timeout and an address-space limit, and prints one row per case: nodes, file size,
seconds and exit status of each command, the growth of analyze's time from a quarter of the nodes
to all of them (linear: about 4; quadratic: about 16), and the larger peak RSS. The exit status is
1 when a case took longer than --threshold seconds, grew by more than --growth, or ended other than
with 0 (or an exit status the case expects: a model over a limit, or one predict cannot answer for,
is refused with 1, not hung on). The growth is the check that catches a super-linear path; the
absolute threshold a stall.

usage: /usr/bin/python3 tools/scale_probe.py [--gpucast build/gpucast] [--predictor FILE]
           [--nodes 49990] [--threshold 10] [--growth 8] [--timeout 120] [--mem-gb 8]
           [--only REGEX] [--keep DIR] [--no-predict] [--no-growth]

Without --predictor, one is trained first (`gpucast train --algo ridge`, GPUCAST_DATA must point
at the data). Times are wall-clock seconds of one run each, on whatever machine runs it.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def const_i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def const_f(name, shape, value=0.5):
    return numpy_helper.from_array(np.full(shape, value, dtype=np.float32), name)


def model(nodes, inputs, outputs, inits=(), value_info=(), functions=(), opsets=None):
    g = helper.make_graph(list(nodes), "probe", list(inputs), list(outputs), list(inits), value_info=list(value_info))
    ops = opsets or [helper.make_opsetid("", OPSET)]
    m = helper.make_model(g, opset_imports=ops, producer_name="scale_probe", functions=list(functions))
    m.ir_version = 8
    return m


def x_in(shape=("N", 4)):
    return helper.make_tensor_value_info("x", F, list(shape))


def y_out(name="y"):
    return helper.make_tensor_value_info(name, F, None)


def chain(op, n, first="x", attrs=None, extra_inputs=(), name=True, outputs=1):
    """n nodes t_k = op(t_{k-1}, *extra_inputs); the last output is 'y'."""
    nodes = []
    prev = first
    for k in range(n):
        out = "y" if k == n - 1 else "t%d" % k
        outs = [out] + ["aux%d_%d" % (k, j) for j in range(1, outputs)]
        kw = dict(attrs or {})
        nodes.append(helper.make_node(op, [prev] + list(extra_inputs), outs, name=("n%d" % k) if name else "", **kw))
        prev = out
    return nodes


# ------------------------------------------------------------------------------------------ cases
# Each returns a ModelProto, or (ModelProto, {command: allowed exit statuses}) where a command
# may refuse the model (exit 1) rather than answer; N is the node budget.

def c_identity_fanout(N):
    # The known instance: N-1 Identity(w) of one initializer plus Add(x, i0).
    nodes = [helper.make_node("Identity", ["w"], ["i%d" % k], name="id%d" % k) for k in range(N - 1)]
    nodes.append(helper.make_node("Add", ["x", "i0"], ["y"], name="add"))
    return model(nodes, [x_in()], [y_out()], [const_f("w", [4])])


def c_fanout(N):
    # One tensor consumed by N nodes.
    nodes = [helper.make_node("Relu", ["x"], ["r%d" % k], name="r%d" % k) for k in range(N - 1)]
    nodes.append(helper.make_node("Relu", ["r0"], ["y"], name="last"))
    return model(nodes, [x_in()], [y_out()])


def c_chain_relu(N):
    return model(chain("Relu", N), [x_in()], [y_out()])


def c_chain_add(N):
    return model(chain("Add", N, extra_inputs=["b"]), [x_in()], [y_out()], [const_f("b", [4])])


def c_chain_reshape(N):
    return model(chain("Reshape", N, extra_inputs=["s"]), [x_in()], [y_out()], [const_i64("s", [-1, 4])])


def c_chain_transpose(N):
    return model(chain("Transpose", N, attrs={"perm": [1, 0]}), [x_in()], [y_out()])


def c_chain_unsqueeze(N):
    nodes = []
    prev = "x"
    for k in range(N):
        out = "y" if k == N - 1 else "t%d" % k
        op = "Unsqueeze" if k % 2 == 0 else "Squeeze"
        nodes.append(helper.make_node(op, [prev, "ax"], [out], name="n%d" % k))
        prev = out
    return model(nodes, [x_in()], [y_out()], [const_i64("ax", [0])])


def c_chain_cast(N):
    return model(chain("Cast", N, attrs={"to": F}), [x_in()], [y_out()])


def c_chain_identity(N):
    return model(chain("Identity", N), [x_in()], [y_out()])


def c_chain_concat(N):
    return model(chain("Concat", N, attrs={"axis": 1}), [x_in()], [y_out()])


def c_chain_slice(N):
    return model(chain("Slice", N, extra_inputs=["st", "en"]), [x_in()], [y_out()],
                 [const_i64("st", [0]), const_i64("en", [1 << 40])])


def c_shape_arith(N):
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, repeated: what shape_fold folds.
    nodes, inits = [], [const_i64("i0", 0), const_i64("ax", [0]), const_i64("four", [4])]
    prev = "x"
    steps = N // 5
    for k in range(steps):
        out = "y" if k == steps - 1 else "t%d" % k
        nodes += [
            helper.make_node("Shape", [prev], ["s%d" % k], name="shape%d" % k),
            helper.make_node("Gather", ["s%d" % k, "i0"], ["g%d" % k], name="gather%d" % k, axis=0),
            helper.make_node("Unsqueeze", ["g%d" % k, "ax"], ["u%d" % k], name="unsq%d" % k),
            helper.make_node("Concat", ["u%d" % k, "four"], ["c%d" % k], name="concat%d" % k, axis=0),
            helper.make_node("Reshape", [prev, "c%d" % k], [out], name="reshape%d" % k),
        ]
        prev = out
    return model(nodes, [x_in()], [y_out()], inits)


def c_chain_matmul(N):
    return model(chain("MatMul", N, extra_inputs=["W"]), [x_in()], [y_out()], [const_f("W", [4, 4])])


def c_chain_conv(N):
    return model(chain("Conv", N, extra_inputs=["W"], attrs={"kernel_shape": [1, 1]}),
                 [x_in(("N", 4, 4, 4))], [y_out()], [const_f("W", [4, 4, 1, 1])])


def c_chain_layernorm(N):
    return model(chain("LayerNormalization", N, extra_inputs=["g", "b"], attrs={"axis": -1}), [x_in()], [y_out()],
                 [const_f("g", [4]), const_f("b", [4])])


def c_chain_softmax(N):
    return model(chain("Softmax", N, attrs={"axis": -1}), [x_in()], [y_out()])


def c_chain_dropout(N):
    return model(chain("Dropout", N, extra_inputs=["ratio"], outputs=2), [x_in()], [y_out()],
                 [numpy_helper.from_array(np.array(0.1, dtype=np.float32), "ratio")])


def c_concat_wide(N):
    # One Concat of N inputs, each a distinct Relu of x.
    nodes = [helper.make_node("Relu", ["x"], ["r%d" % k], name="r%d" % k) for k in range(N - 1)]
    nodes.append(helper.make_node("Concat", ["r%d" % k for k in range(N - 1)], ["y"], name="cat", axis=1))
    return model(nodes, [x_in()], [y_out()])


def c_concat_same(N):
    # One Concat of 10 N copies of a rank-64 x (3 bytes an input on the wire: node inputs are not
    # entries of max_entries): a shape is kept per slot, so this held 835 MB at N = 49,990 before
    # LoadLimits::max_slot_dims (4,000,000 dims at all slots); now refused at once.
    return model([helper.make_node("Concat", ["x"] * (10 * N), ["y"], name="cat", axis=1)],
                 [x_in(["N"] + [1] * 63)], [y_out()]), {"analyze": (1,), "predict": (1,)}


def c_sum_wide(N):
    nodes = [helper.make_node("Relu", ["x"], ["r%d" % k], name="r%d" % k) for k in range(N - 1)]
    nodes.append(helper.make_node("Sum", ["r%d" % k for k in range(N - 1)], ["y"], name="sum"))
    return model(nodes, [x_in()], [y_out()])


def c_split_wide(N):
    outs = ["y"] + ["p%d" % k for k in range(1, N)]
    nodes = [helper.make_node("Split", ["x", "sp"], outs, name="split", axis=1)]
    # The split sizes (N values) are past what the loader folds, so the outputs' shapes stay
    # unknown and predict refuses the partial report.
    return model(nodes, [x_in(("N", N))], [y_out()], [const_i64("sp", [1] * N)]), {"predict": (0, 1)}


def c_many_inputs(N):
    ins = [helper.make_tensor_value_info("in%d" % k, F, ["N", 4]) for k in range(N)]
    return model([helper.make_node("Sum", ["in%d" % k for k in range(N)], ["y"], name="sum")], ins, [y_out()])


def c_many_outputs(N):
    nodes = [helper.make_node("Relu", ["x"], ["o%d" % k], name="r%d" % k) for k in range(N)]
    return model(nodes, [x_in()], [y_out("o%d" % k) for k in range(N)])


def c_many_initializers(N):
    nodes = chain("Add", N)
    for k, n in enumerate(nodes):
        n.input.append("b%d" % k)
    return model(nodes, [x_in()], [y_out()], [const_f("b%d" % k, [4]) for k in range(N)])


def c_many_value_info(N):
    vi = [helper.make_tensor_value_info("t%d" % k, F, ["N", 4]) for k in range(N - 1)]
    return model(chain("Relu", N), [x_in()], [y_out()], value_info=vi)


def c_long_names(N):
    # Names of ~110 characters sharing a long prefix (max_graph_bytes, 16 MiB, bounds the file:
    # ~230 B a node here).
    pre = "/encoder/layers." + "x" * 80 + "/"
    nodes = []
    prev = "x"
    for k in range(N):
        out = "y" if k == N - 1 else pre + "out%d" % k
        nodes.append(helper.make_node("Relu", [prev], [out], name=pre + "Relu_%d" % k))
        prev = out
    return model(nodes, [x_in()], [y_out()])


def c_unnamed(N):
    return model(chain("Relu", N, name=False), [x_in()], [y_out()])


def c_same_name(N):
    nodes = chain("Relu", N)
    for n in nodes:
        n.name = "Relu_0"
    return model(nodes, [x_in()], [y_out()])


def c_unknown_op(N):
    # N nodes of an op with no schema in the default domain: a warning each?
    return model(chain("NoSuchOp", N), [x_in()], [y_out()]), {"predict": (1,)}  # no cost rule


def c_custom_domain(N):
    nodes = chain("Foo", N)
    for n in nodes:
        n.domain = "com.example"
    return model(nodes, [x_in()], [y_out()],
                 opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)]), {"predict": (1,)}


def c_function_calls(N):
    # A 5-node model-local function called N/5 times in a chain.
    body = chain("Relu", 5, first="i")
    for n in body:
        n.output[:] = ["o" if o == "y" else o for o in n.output]
    f = helper.make_function("local", "F", ["i"], ["o"], body, [helper.make_opsetid("", OPSET)])
    calls = []
    prev = "x"
    k_max = N // 5
    for k in range(k_max):
        out = "y" if k == k_max - 1 else "c%d" % k
        calls.append(helper.make_node("F", [prev], [out], name="call%d" % k, domain="local"))
        prev = out
    return model(calls, [x_in()], [y_out()], functions=[f],
                 opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])


def c_function_wide(N):
    # One call of a function whose body is N Relu nodes of its input.
    body = [helper.make_node("Relu", ["i"], ["b%d" % k], name="b%d" % k) for k in range(N - 1)]
    body.append(helper.make_node("Relu", ["b0"], ["o"], name="last"))
    f = helper.make_function("local", "F", ["i"], ["o"], body, [helper.make_opsetid("", OPSET)])
    return model([helper.make_node("F", ["x"], ["y"], name="call", domain="local")], [x_in()], [y_out()],
                 functions=[f], opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])


def c_dead_nodes(N):
    # N nodes none of whose outputs reach the graph output.
    nodes = chain("Relu", N - 1)
    nodes[-1].output[0] = "dead"
    nodes.append(helper.make_node("Relu", ["x"], ["y"], name="live"))
    return model(nodes, [x_in()], [y_out()])


def c_weight_concat_chain(N):
    # t_k = Concat(t_{k-1}, w_k) of N distinct 1-float initializers: every t_k is a weight made of
    # k parameters (cost.cc's roots), then MatMul'd with the data.
    nodes, inits = [], [const_f("w0", [1])]
    prev = "w0"
    for k in range(1, N):
        inits.append(const_f("w%d" % k, [1]))
        out = "t%d" % k
        nodes.append(helper.make_node("Concat", [prev, "w%d" % k], [out], name="c%d" % k, axis=0))
        prev = out
    nodes.append(helper.make_node("Mul", ["x", prev], ["y"], name="use"))
    return model(nodes, [x_in(("N", N))], [y_out()], inits)


def c_weight_identity_chain(N):
    # A weight passed through N-1 Identity nodes before a MatMul with the data.
    nodes = chain("Identity", N - 1, first="W")
    nodes[-1].output[0] = "Wn"
    nodes.append(helper.make_node("MatMul", ["x", "Wn"], ["y"], name="mm"))
    return model(nodes, [x_in()], [y_out()], [const_f("W", [4, 4])])


def c_int_value_chain(N):
    # N Add nodes of a 4096-element int64 constant (shape_fold's kMaxFoldElements): every
    # intermediate value is folded and kept.
    nodes = chain("Add", N - 2, first="c", extra_inputs=["z"])
    nodes[-1].output[0] = "v"
    nodes += [helper.make_node("Cast", ["v"], ["vf"], name="cast", to=F),
              helper.make_node("Add", ["x", "vf"], ["y"], name="use")]
    return model(nodes, [x_in(("N", 4096))], [y_out()], [const_i64("c", list(range(4096))), const_i64("z", [0])])


def c_if_chain(N):
    # N/3 If nodes in a chain, each branch one Identity of the outer value (outer-scope reads).
    nodes = []
    prev = "x"
    k_max = N // 3
    for k in range(k_max):
        out = "y" if k == k_max - 1 else "t%d" % k
        branches = []
        for b in ("then", "else"):
            bo = "%s_out%d" % (b, k)
            branches.append(helper.make_graph([helper.make_node("Identity", [prev], [bo], name="%s%d" % (b, k))],
                                              "%s%d" % (b, k), [], [helper.make_tensor_value_info(bo, F, None)]))
        nodes.append(helper.make_node("If", ["cond"], [out], name="if%d" % k, then_branch=branches[0],
                                      else_branch=branches[1]))
        prev = out
    return model(nodes, [x_in()], [y_out()], [numpy_helper.from_array(np.array(True), "cond")]), \
        {"predict": (0, 1)}


def c_warnings(N):
    # N distinct custom ops (one per node): N distinct warnings.
    nodes = chain("Foo", N)
    for k, n in enumerate(nodes):
        n.domain = "com.example"
        n.op_type = "Foo%d" % k
    return model(nodes, [x_in()], [y_out()],
                 opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)]), {"predict": (1,)}


def c_high_rank(N):
    # A chain of N Relu nodes of a rank-R input, R = N/5 ones: each inferred shape repeats R dims
    # (nodes x R time and memory before LoadLimits::max_rank; now refused at once).
    r = max(1, N // 5)
    return model(chain("Relu", N), [x_in(["N"] + [1] * r)], [y_out()]), {"analyze": (1,), "predict": (1,)}


def c_rank_64(N):
    # The same chain at the largest rank allowed (LoadLimits::max_rank, 64), as long as
    # LoadLimits::max_slot_dims allows (2 slots of 65 dims a node: 30,000 nodes).
    return model(chain("Relu", min(N, 30000)), [x_in(["N"] + [1] * 63)], [y_out()])


def c_many_attributes(N):
    # N Relu nodes, the first with 3N unknown attributes (max_entries, 200,000, counts them).
    nodes = chain("Relu", N)
    nodes[0].attribute.extend(helper.make_attribute("a%d" % k, k) for k in range(3 * N))
    return model(nodes, [x_in()], [y_out()])


def c_many_opset_imports(N):
    # N distinct custom domains imported, and N nodes, each of its own domain.
    nodes = chain("Foo", N)
    for k, n in enumerate(nodes):
        n.domain = "d%d" % k
    return model(nodes, [x_in()], [y_out()],
                 opsets=[helper.make_opsetid("", OPSET)] + [helper.make_opsetid("d%d" % k, 1) for k in range(N)]), \
        {"predict": (1,)}


def c_over_limit(N):
    # Past the node limit: refused (exit 1), quickly.
    return model(chain("Relu", N + 11), [x_in()], [y_out()]), {"analyze": (1,), "predict": (1,)}


CASES = [(name[2:], fn) for name, fn in sorted(globals().items()) if name.startswith("c_")]


MEM_LIMIT = [0]  # bytes of address space each command may take (0: no limit)


def limit_memory():
    if MEM_LIMIT[0]:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT[0], MEM_LIMIT[0]))


def run(cmd, timeout):
    """(seconds, exit status or 'timeout', stderr, peak RSS in MB) of one command, under /usr/bin/time."""
    with tempfile.NamedTemporaryFile(prefix="scale_probe.time.") as tf:
        t0 = time.monotonic()
        try:
            p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf.name] + cmd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout, preexec_fn=limit_memory)
            rc, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        secs = time.monotonic() - t0
        try:
            rss = int(open(tf.name).read().split()[-1]) / 1024
        except (ValueError, IndexError):
            rss = 0.0
    return secs, rc, err, rss


def build(fn, n):
    r = fn(n)
    m, ok = r if isinstance(r, tuple) else (r, {})
    return m, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpucast", default="build/gpucast")
    ap.add_argument("--predictor", help="predictor file (default: train one with --algo ridge)")
    ap.add_argument("--nodes", type=int, default=49990, help="node budget of each case")
    ap.add_argument("--threshold", type=float, default=10.0,
                    help="seconds a command may take (a linear 50,000-node chain already takes 2-5 s on a shared 2-core machine)")
    ap.add_argument("--growth", type=float, default=8.0,
                    help="largest allowed ratio of analyze's time at --nodes to its time at a quarter of them "
                         "(linear: about 4, quadratic: 16), checked where the quarter takes over 0.2 s "
                         "(below it, process start-up dominates)")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--only", help="regex of case names")
    ap.add_argument("--keep", help="directory to keep the models in")
    ap.add_argument("--no-predict", action="store_true", help="time analyze only")
    ap.add_argument("--mem-gb", type=float, default=8.0, help="address space each command may take (RLIMIT_AS)")
    ap.add_argument("--no-growth", action="store_true", help="skip the quarter-size run")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="scale_probe.")
    out_dir = a.keep or tmp
    os.makedirs(out_dir, exist_ok=True)
    predictor = a.predictor
    if not a.no_predict and not predictor:
        predictor = os.path.join(tmp, "predictor.json")
        secs, rc, err, _ = run([a.gpucast, "train", "--algo", "ridge", "-q", "-o", predictor], 1800)
        if rc != 0:
            sys.exit("scale_probe: gpucast train failed (%s): %s" % (rc, err[-2000:]))
        print("trained %s in %.1f s" % (predictor, secs), flush=True)

    MEM_LIMIT[0] = int(a.mem_gb * (1 << 30))
    print("%-22s %6s %9s %10s %4s %10s %4s %7s %7s" % ("case", "nodes", "bytes", "analyze_s", "rc", "predict_s", "rc",
                                                       "growth", "rss_mb"))
    bad = []

    def write(m, name):
        path = os.path.join(out_dir, name + ".onnx")
        data = m.SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        return path, len(data)

    for name, fn in CASES:
        if a.only and not re.search(a.only, name):
            continue
        m, ok = build(fn, a.nodes)
        path, size = write(m, name)
        nodes = len(m.graph.node) + sum(len(f.node) for f in m.functions)
        row = [name, nodes, size]
        cmds = [("analyze", [a.gpucast, "analyze", path, "--batch", "2", "--json"])]
        if not a.no_predict:
            cmds.append(("predict", [a.gpucast, "predict", "-p", predictor, "-m", path, "-b", "2", "--json", "-q"]))
        analyze_s = None
        peak = 0.0
        for what, cmd in cmds:
            secs, rc, err, rss = run(cmd, a.timeout)
            row += ["%.2f" % secs, rc]
            peak = max(peak, rss)
            if what == "analyze":
                analyze_s = secs
            if rc not in ok.get(what, (0,)):
                bad.append("%s %s: exit %s: %s" % (name, what, rc, err.strip()[-300:]))
            elif secs > a.threshold:
                bad.append("%s %s: %.2f s > %.1f s" % (name, what, secs, a.threshold))
        if a.no_predict:
            row += ["-", "-"]
        growth = "-"
        if not a.no_growth and analyze_s is not None and analyze_s > 0.5:
            small, _ = build(fn, a.nodes // 4)
            spath, _ = write(small, name + ".quarter")
            qs, qrc, _, _ = run([a.gpucast, "analyze", spath, "--batch", "2", "--json"], a.timeout)
            g = analyze_s / max(qs, 1e-3)
            growth = "%.1f" % g
            if g > a.growth and qs > 0.2:
                bad.append("%s analyze: %.2f s at %d nodes, %.2f s at a quarter: x%.1f > x%.1f" %
                           (name, analyze_s, a.nodes, qs, g, a.growth))
            if not a.keep:
                os.remove(spath)
        row += [growth, "%.0f" % peak]
        print("%-22s %6d %9d %10s %4s %10s %4s %7s %7s" % tuple(row), flush=True)
        if not a.keep:
            os.remove(path)
    for b in bad:
        print("SLOW/FAILED: " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
