#!/usr/bin/env python3
"""Hostile values of the request fields added on 5 Dec 2026, sent to a running
`gpucast serve` (tests/hostile_client.sh starts it and calls this):

  --jobs URL      `mig` in POST /v1/jobs (JSON and the upload's query string),
                  fields whose refusal quotes them (attrs, dims, model, gpu: an ESC or
                  NUL must not come back raw), observations of a job (gpu, a key twice):
                  wrong types, huge and over-long strings, unicode and control
                  bytes, a profile no GPU has, a profile of another GPU than the
                  job's, with gpus > 1, with a GPU the cluster lacks;
  --webhook URL   the Kubernetes admission webhook (POST /k8s/v1/mutate) on
                  pods whose spec.affinity.nodeAffinity is hostile: wrong types
                  at every level, deep nesting, huge term, expression and value
                  lists, non-string and over-long values, unicode.

Each case states what it must get: a refusal (HTTP 4xx with {"error": ...}, or
for the webhook an AdmissionReview denying the pod with a 4xx status code and a
message), naming the field, with no raw control byte in the message; or, for
the few legitimate inputs among them, acceptance. Any 5xx, hang (--timeout),
dropped connection, or a service that stops answering /healthz within 2 s after
a case fails it. Exit 1 if any case failed.

    tests/hostile_fields.py --jobs http://127.0.0.1:PORT --token-file F
                            [--webhook http://127.0.0.1:PORT2] [--review tests/k8s/review-create-pod.json]
                            [--only REGEX]
"""
import argparse
import base64
import copy
import json
import re
import sys
import time
import urllib.error
import urllib.request

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def send(url, body, headers, timeout, content_type="application/json"):
    """(status, parsed JSON or None, text, seconds); status 0 on a dropped connection or hang."""
    data = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    req = urllib.request.Request(url, data=data, method="POST", headers=dict(headers, **{"Content-Type": content_type}))
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode("utf-8", "replace")
    except Exception as e:  # a dropped connection, a timeout
        return 0, None, f"{type(e).__name__}: {e}", time.time() - t0
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return status, parsed, text, time.time() - t0


def healthy(base, timeout=2):
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=timeout) as r:
            return r.status == 200
    except Exception:
        return False


def nested(depth, leaf):
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


# ---- mig in POST /v1/jobs. Base job: the cluster's GPU (H100 in hostile_client.sh).
BASE_JOB = {"model": "vgg.onnx", "batch": 8}
# (name, fields merged into the base job, expected: 400 / 422 / "4xx" / 201, text the refusal must contain)
MIG_JSON = [
    ("mig_int", {"mig": 7}, 400, "field 'mig'"),
    ("mig_float", {"mig": 1.5}, 400, "field 'mig'"),
    ("mig_bool", {"mig": True}, 400, "field 'mig'"),
    ("mig_null", {"mig": None}, 400, "field 'mig'"),
    ("mig_array", {"mig": ["1g.10gb"]}, 400, "field 'mig'"),
    ("mig_object", {"mig": {"profile": "1g.10gb"}}, 400, "field 'mig'"),
    ("mig_nested_array", {"mig": nested(30, "1g.10gb")}, 400, "field 'mig'"),
    ("mig_257_bytes", {"mig": "a" * 257}, 400, "at most 256 bytes"),
    ("mig_900kib", {"mig": "1g." + "9" * 900000 + "gb"}, 400, "at most 256 bytes"),
    # Past the 1 MiB bound of a JSON body: refused before it is parsed.
    ("mig_2mib", {"mig": "1g." + "9" * (2 << 20) + "gb"}, 413, "request body larger than"),
    ("mig_huge_number_text", {"mig": "9" * 200 + "g.10gb"}, 400, "field 'mig'"),
    ("mig_unknown", {"mig": "7g.99gb"}, 400, "unknown MIG profile '7g.99gb'"),
    ("mig_fullwidth", {"mig": "\uff11g.10gb"}, 400, "field 'mig'"),
    ("mig_rtl_override", {"mig": "1g.10gb\u202e"}, 400, "printable ASCII"),
    ("mig_emoji", {"mig": "\U0001f4a5g.10gb"}, 400, "field 'mig'"),
    ("mig_nul", {"mig": "1g.10gb\u0000"}, 400, "printable ASCII"),
    ("mig_del", {"mig": "1g.10gb\u007f"}, 400, "printable ASCII"),
    ("mig_newline", {"mig": "1g.10gb\nforged log line"}, 400, "field 'mig'"),
    ("mig_escape_seq", {"mig": "\u001b[31m1g.10gb"}, 400, "field 'mig'"),

    ("mig_zero_slice", {"mig": "0g.0gb"}, 400, "field 'mig'"),
    # A profile of an A100-40GB only: the job's H100 has no such slice (found while predicting).
    ("mig_other_gpu", {"mig": "1g.5gb"}, 422, "1g.5gb"),
    ("mig_other_gpu_t4", {"gpu": "T4", "mig": "1g.10gb"}, 422, "field 'gpu'"),
    ("mig_gpu_not_in_cluster", {"gpu": "A100-80GB", "mig": "1g.10gb"}, 422, "field 'gpu'"),
    ("mig_gpus_2", {"gpus": 2, "mig": "1g.10gb"}, 422, "gpus 2"),
    ("mig_gpus_1024", {"gpus": 1024, "mig": "1g.10gb"}, 422, ""),
    ("mig_gpus_huge", {"gpus": 10 ** 30, "mig": "1g.10gb"}, 400, "field 'gpus'"),
    ("mig_with_nodes", {"gpus": 2, "nodes": 2, "mig": "1g.10gb"}, "4xx", ""),
    # Legitimate: "" is the whole GPU; a profile of the H100 in another spelling is its slice.
    ("mig_empty_whole_gpu", {"mig": ""}, 201, ""),
    ("mig_h100_slice_spelled", {"mig": "MIG 1G.10GB"}, 201, ""),
    # ASCII punctuation is the table's spelling rule's to ignore, as gpucast predict --mig does.
    ("mig_punctuation_spelled", {"mig": "-1g.10gb"}, 201, ""),
]
# Fields whose refusal quotes what was sent (6 Dec 2026, fuzz round 18): an ESC or NUL came back raw
# in the message (attrs, dims, an unknown key, model, interconnect), and a GPU name with a NUL or a
# right-to-left override was read as the H100. The refusal must name the field and hold no control byte.
ESC = "\u001b[2J"
QUOTED_JSON = [
    ("quoted_attrs_value", {"attrs": {"tf32": "1" + ESC}}, 400, "job attribute 'tf32'"),
    ("quoted_attrs_key", {"attrs": {"tf" + ESC: 1}}, 400, "job attribute 'tf?[2J'"),
    ("quoted_attrs_optimizer", {"attrs": {"optimizer": "adam" + ESC}}, 400, "job attribute 'optimizer'"),
    ("quoted_dims_key", {"dims": {"se" + ESC: 4}}, 422, "dims.se?[2J"),
    ("quoted_unknown_key", {"x" + ESC: 1}, 400, "unknown field 'x?[2J'"),
    ("quoted_model", {"model": "vgg" + ESC + ".onnx"}, 422, "model 'vgg?[2J.onnx'"),
    ("quoted_interconnect", {"interconnect": "nv" + ESC}, 400, "interconnect"),
    ("quoted_gpu_unknown", {"gpu": "H1" + ESC}, 400, "field 'gpu': a GPU name is printable ASCII"),
    ("gpu_nul", {"gpu": "H100\u0000"}, 400, "field 'gpu': a GPU name is printable ASCII"),
    ("gpu_rtl_override", {"gpu": "\u202eH100"}, 400, "field 'gpu': a GPU name is printable ASCII"),
    ("gpu_spelled_nvidia_smi", {"gpu": "NVIDIA H100 80GB HBM3"}, 201, ""),
]
# POST /v1/jobs/{id}/observations of a job the run submits: (name, raw body, expected, text).
OBSERVATIONS = [
    ("obs_gpu_nul", '{"gpu_util": 50, "source": "dcgm", "gpu": "H100\\u0000-80GB"}', 400, "field 'gpu': a GPU name is printable ASCII"),
    ("obs_gpu_rtl", '{"gpu_util": 50, "source": "dcgm", "gpu": "\\u202eH100"}', 400, "field 'gpu': a GPU name is printable ASCII"),
    ("obs_key_twice", '{"gpu_util": 50, "gpu_util": 60, "source": "dcgm"}', 400, "key 'gpu_util' given twice"),
    ("obs_unknown_key_esc", '{"gpu_util": 50, "source": "dcgm", "x\\u001b[2J": 1}', 400, "unknown field 'x?[2J'"),
    ("obs_gpu_spelled", '{"gpu_util": 50, "source": "dcgm", "gpu": "h100"}', 201, ""),
]
# The upload form: POST /v1/jobs?batch=8&mig=... with the ONNX file as the body.
MIG_QUERY = [
    ("mig_query_unknown", "7g.99gb", 400, "parameter 'mig'"),
    ("mig_query_300_bytes", "a" * 300, 400, "parameter 'mig': at most 256 bytes"),
    # Control bytes and bad UTF-8 in a query string are refused for any parameter.
    ("mig_query_nul", "1g.10gb%00", 400, "query string: not valid UTF-8, or control bytes"),
    ("mig_query_bad_utf8", "%FF%FE", 400, "query string: not valid UTF-8, or control bytes"),
    ("mig_query_utf8", "%E2%80%AE1g.10gb", 400, "parameter 'mig': a MIG profile name is printable ASCII"),
    ("mig_query_other_gpu", "1g.5gb", 422, "1g.5gb"),
    ("mig_query_twice", "1g.10gb&mig=2g.20gb", 400, "given more than once"),
]

# ---- spec.affinity.nodeAffinity of a pod sent to the webhook.
P = "nvidia.com/gpu.product"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"


class Raw(str):
    """JSON text spliced in as it is (nesting too deep for json.dumps)."""


def node_affinity(terms):
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": terms}}}


def expr(values, op="In", key=P):
    return {"matchExpressions": [{"key": key, "operator": op, "values": values}]}


# (name, spec.affinity, expected "deny" / "400" / "allow", text the message must contain)
AFFINITY = [
    ("aff_string", "A100", "deny", "spec.affinity"),
    ("aff_number", 7, "deny", "spec.affinity"),
    ("aff_array", [node_affinity([])], "deny", "spec.affinity"),
    ("aff_node_string", {"nodeAffinity": "x"}, "deny", "spec.affinity.nodeAffinity"),
    ("aff_node_array", {"nodeAffinity": [1, 2]}, "deny", "spec.affinity.nodeAffinity"),
    ("aff_required_array", {"nodeAffinity": {REQ: []}}, "deny", REQ),
    ("aff_required_bool", {"nodeAffinity": {REQ: True}}, "deny", REQ),
    ("aff_terms_object", {"nodeAffinity": {REQ: {"nodeSelectorTerms": {"a": 1}}}}, "deny", "nodeSelectorTerms"),
    ("aff_terms_string", {"nodeAffinity": {REQ: {"nodeSelectorTerms": "x" * 100000}}}, "deny", "nodeSelectorTerms"),
    ("aff_terms_65", node_affinity([expr(["A100-SXM4-80GB"])] * 65), "deny", "more than gpucast reads (64)"),
    ("aff_terms_200k", node_affinity([{}] * 200000), "deny", "more than gpucast reads (64)"),
    ("aff_term_number", node_affinity([7]), "deny", "nodeSelectorTerms[0]"),
    ("aff_term_null", node_affinity([None]), "deny", "nodeSelectorTerms[0]"),
    ("aff_exprs_object", node_affinity([{"matchExpressions": {"key": P}}]), "deny", "matchExpressions"),
    ("aff_exprs_65", node_affinity([{"matchExpressions": [{"key": P, "operator": "Exists"}] * 65}]), "deny",
     "more than gpucast reads (64)"),
    ("aff_exprs_100k", node_affinity([{"matchExpressions": [{}] * 100000}]), "deny", "more than gpucast reads (64)"),
    ("aff_expr_string", node_affinity([{"matchExpressions": ["key=" + P]}]), "deny", "matchExpressions[0]"),
    ("aff_key_number", node_affinity([{"matchExpressions": [{"key": 7, "operator": "In", "values": ["x"]}]}]), "deny",
     ".key"),
    ("aff_key_missing", node_affinity([{"matchExpressions": [{"operator": "In", "values": ["x"]}]}]), "deny", ".key"),
    ("aff_operator_number", node_affinity([{"matchExpressions": [{"key": P, "operator": 1, "values": ["x"]}]}]),
     "deny", ".operator"),
    ("aff_values_missing", node_affinity([{"matchExpressions": [{"key": P, "operator": "In"}]}]), "deny", ".values"),
    ("aff_values_string", node_affinity([expr("NVIDIA-A100-SXM4-80GB")]), "deny", ".values"),
    ("aff_values_object", node_affinity([expr({"0": "NVIDIA-A100-SXM4-80GB"})]), "deny", ".values"),
    ("aff_values_257", node_affinity([expr([f"gpu-{i}" for i in range(257)])]), "deny", "more than gpucast reads (256)"),
    ("aff_values_150k", node_affinity([expr(["a"] * 150000)]), "deny", "more than gpucast reads (256)"),
    ("aff_values_notin_100k", node_affinity([expr([str(i) for i in range(100000)], op="NotIn")]), "deny",
     "more than gpucast reads (256)"),
    # Past the 1 MiB bound of a JSON body: refused before it is parsed.
    ("aff_values_2mib", node_affinity([expr(["NVIDIA-A100-SXM4-80GB"] * 100000)]), "413", "request body larger than"),
    ("aff_value_number", node_affinity([expr([7])]), "deny", "want strings"),
    ("aff_value_null", node_affinity([expr([None])]), "deny", "want strings"),
    ("aff_value_bool", node_affinity([expr([True])]), "deny", "want strings"),
    ("aff_value_huge_number", node_affinity([expr([1e308, -1e308, 2 ** 63])]), "deny", "want strings"),
    ("aff_value_object", node_affinity([expr([{"name": "A100"}])]), "deny", "want strings"),
    ("aff_value_nested_5", node_affinity([expr([nested(5, "A100")])]), "deny", "want strings"),
    ("aff_value_900kib", node_affinity([expr(["A" * 900000])]), "deny", "longer than a label value"),
    ("aff_value_64", node_affinity([expr(["A" * 64])]), "deny", "longer than a label value"),
    # A MIG product (GPU Feature Discovery's <GPU>-MIG-<profile>) gpucast cannot read: refused.
    ("aff_value_mig_unknown_gpu", node_affinity([expr(["NVIDIA-Warp9000-MIG-1g.10gb"])]), "deny", "-MIG-"),
    ("aff_value_mig_control", node_affinity([expr(["NVIDIA-A100-SXM4-80GB-MIG-1g.10gb\x1b[31m"])]), "deny", "-MIG-"),
    ("aff_value_mig_rtl", node_affinity([expr(["NVIDIA-A100-SXM4-80GB-MIG-\u202e1g.10gb"])]), "deny", "not a label value"),
    ("aff_value_mig_two", node_affinity([expr(["NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
                                               "NVIDIA-A100-SXM4-80GB-MIG-2g.20gb"])]), "deny", "-MIG-"),
    ("aff_in_notin_cancel", node_affinity([{"matchExpressions": [
        {"key": P, "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]},
        {"key": P, "operator": "NotIn", "values": ["NVIDIA-A100-SXM4-80GB"]}]}]), "deny", "nvidia.com/gpu.product"),
    # Nested past the service's JSON depth bound (32): the body is refused before it is read (400).
    ("aff_deep_40", node_affinity([expr([nested(40, "A100")])]), "400", "nested deeper than 32"),
    ("aff_deep_100k", Raw('{"nodeAffinity": ' + "[" * 100000 + "]" * 100000 + "}"), "400", "nested deeper than 32"),
    # Legitimate: what names no product is not gpucast's to judge (the API server validates the
    # pod after the mutating webhooks): another key's values, Exists, an empty affinity.
    ("aff_other_key_junk", node_affinity([expr([7, None], key="topology.kubernetes.io/zone")]), "allow", ""),
    ("aff_exists", node_affinity([{"matchExpressions": [{"key": P, "operator": "Exists"}]}]), "allow", ""),
    ("aff_empty", {}, "allow", ""),
    ("aff_null_node", {"nodeAffinity": None}, "allow", ""),
    # A whole GPU's product (no -MIG-) is the pod's GPU type (docs/kubernetes.md, "Mixed clusters"):
    # a value no node can carry (no label value) or a GPU the table lacks is refused, naming it.
    ("aff_value_control", node_affinity([expr(["NVIDIA-A100\n\x1b[31mforged"])]), "deny", "not a label value"),
    ("aff_value_rtl", node_affinity([expr(["NVIDIA-A100-SXM4-80GB\u202e"])]), "deny", "not a label value"),
    ("aff_value_emoji", node_affinity([expr(["\U0001f4a5" * 15])]), "deny", "not a label value"),
    ("aff_value_unknown_product", node_affinity([expr(["NVIDIA-Warp9000"])]), "deny", "unknown GPU 'NVIDIA-Warp9000'"),
]


# gpucast.io annotations of the pod whose denial quotes them (kubectl prints it to a terminal):
# (name, annotation, value, expected, text the denial must contain).
ANNOTATIONS = [
    ("ann_attrs_value_esc", "gpucast.io/attrs", "tf32=1" + ESC, "deny", "job attribute 'tf32': value '1?[2J'"),
    ("ann_attrs_key_esc", "gpucast.io/attrs", "t" + ESC + "=1", "deny", "job attribute 't?[2J'"),
    ("ann_dims_key_esc", "gpucast.io/dims", "s" + ESC + "=4", "deny", "dims.s?[2J"),
    ("ann_model_esc", "gpucast.io/model", "vgg" + ESC + ".onnx", "deny", "model 'vgg?[2J.onnx'"),
    ("ann_gpu_esc", "gpucast.io/gpu", "H1" + ESC, "deny", "a GPU name is printable ASCII"),
    ("ann_gpu_nul", "gpucast.io/gpu", "A100-80GB\u0000", "deny", "a GPU name is printable ASCII"),
    ("ann_gpu_rtl", "gpucast.io/gpu", "\u202eA100-80GB", "deny", "a GPU name is printable ASCII"),
]


class Runner:
    def __init__(self, timeout):
        self.timeout = timeout
        self.ran = self.bad = 0

    def verdict(self, name, ok, detail):
        self.ran += 1
        if not ok:
            self.bad += 1
        print(f"{'ok' if ok else 'FAIL':8} {name:34} {detail}".replace("\n", " | ")[:400])

    def check_refusal(self, name, status, body, text, expect, must):
        """An HTTP refusal: the expected 4xx, {"error": message} naming `must`, no raw control byte."""
        if status == 0:
            return self.verdict(name, False, f"no answer: {text}")
        if status >= 500:
            return self.verdict(name, False, f"HTTP {status}: {text[:300]}")
        want_ok = (400 <= status < 500) if expect == "4xx" else status == expect
        msg = body.get("error", "") if isinstance(body, dict) else ""
        if not want_ok:
            return self.verdict(name, False, f"HTTP {status}, want {expect}: {text[:300]}")
        if status >= 400:
            if not msg:
                return self.verdict(name, False, f"HTTP {status} without an error message: {text[:300]}")
            if must and must not in msg:
                return self.verdict(name, False, f"HTTP {status}: message lacks '{must}': {msg[:300]}")
            if CONTROL.search(msg):
                return self.verdict(name, False, f"HTTP {status}: raw control byte in the message: {msg[:300]!r}")
            if len(msg) > 2048:
                return self.verdict(name, False, f"HTTP {status}: a {len(msg)}-byte message: {msg[:300]}")
        self.verdict(name, True, f"HTTP {status} {msg[:160]}")


def run_jobs(r, base, headers, only, timeout):
    for name, fields, expect, must in MIG_JSON + QUOTED_JSON:
        if only and not re.search(only, name):
            continue
        body = dict(BASE_JOB, **fields)
        status, parsed, text, _ = send(base + "/v1/jobs", json.dumps(body), headers, timeout)
        r.check_refusal(name, status, parsed, text, expect, must)
        if not healthy(base):
            r.verdict(name + "/healthz", False, "the service did not answer /healthz within 2 s")
    onnx = open(MODEL_FOR_UPLOAD, "rb").read()
    for name, value, expect, must in MIG_QUERY:
        if only and not re.search(only, name):
            continue
        status, parsed, text, _ = send(base + "/v1/jobs?batch=8&mig=" + value, onnx, headers, timeout,
                                       content_type="application/octet-stream")
        r.check_refusal(name, status, parsed, text, expect, must)
        if not healthy(base):
            r.verdict(name + "/healthz", False, "the service did not answer /healthz within 2 s")
    todo = [c for c in OBSERVATIONS if not only or re.search(only, c[0])]
    if todo:
        status, parsed, text, _ = send(base + "/v1/jobs", json.dumps(BASE_JOB), headers, timeout)
        if status != 201 or not isinstance(parsed, dict):
            return r.verdict("observations/job", False, f"HTTP {status}: {text[:300]}")
        job = parsed["id"]
        for name, body, expect, must in todo:
            status, parsed, text, _ = send(f"{base}/v1/jobs/{job}/observations", body, headers, timeout)
            r.check_refusal(name, status, parsed, text, expect, must)
            if not healthy(base):
                r.verdict(name + "/healthz", False, "the service did not answer /healthz within 2 s")


def run_webhook(r, base, review_file, only, timeout):
    review = json.load(open(review_file))
    uid = review["request"]["uid"]
    cases = []
    for name, affinity, expect, must in AFFINITY:
        rv = copy.deepcopy(review)
        rv["request"]["object"]["spec"]["affinity"] = "__RAW__" if isinstance(affinity, Raw) else affinity
        body = json.dumps(rv)
        if isinstance(affinity, Raw):
            body = body.replace('"__RAW__"', affinity)
        cases.append((name, body, expect, must))
    for name, key, value, expect, must in ANNOTATIONS:
        rv = copy.deepcopy(review)
        rv["request"]["object"]["metadata"]["annotations"][key] = value
        cases.append((name, json.dumps(rv), expect, must))
    for name, body, expect, must in cases:
        if only and not re.search(only, name):
            continue
        status, parsed, text, secs = send(base + "/k8s/v1/mutate", body, {}, timeout)
        if status == 0 or status >= 500:
            r.verdict(name, False, f"HTTP {status}: {text[:300]}")
        elif expect in ("400", "413"):
            r.check_refusal(name, status, parsed, text, int(expect), must)
        elif status != 200 or not isinstance(parsed, dict) or not isinstance(parsed.get("response"), dict):
            r.verdict(name, False, f"HTTP {status}, want an AdmissionReview: {text[:300]}")
        else:
            resp = parsed["response"]
            st = resp.get("status") or {}
            msg = st.get("message", "") if isinstance(st, dict) else ""
            code = st.get("code", 0) if isinstance(st, dict) else 0
            if resp.get("uid") != uid:
                r.verdict(name, False, f"uid not echoed: {text[:300]}")
            elif expect == "allow":
                patch = base64.b64decode(resp.get("patch", "")).decode("utf-8", "replace")
                leaked = CONTROL.search(patch) or "forged" in patch or "\u202e" in patch or "Warp9000" in patch
                r.verdict(name, resp.get("allowed") is True and not leaked,
                          f"allowed={resp.get('allowed')}{' LEAKED into the patch' if leaked else ''} {msg[:200]}")
            elif resp.get("allowed") is not False:
                r.verdict(name, False, f"allowed, want a denial: {text[:300]}")
            elif not (isinstance(code, int) and 400 <= code < 500) or not msg:
                r.verdict(name, False, f"denied with code {code!r} and message {msg[:200]!r}")
            elif must and must not in msg:
                r.verdict(name, False, f"denial lacks '{must}': {msg[:300]}")
            elif CONTROL.search(msg):
                r.verdict(name, False, f"raw control byte in the denial: {msg[:300]!r}")
            elif len(msg) > 2048:
                r.verdict(name, False, f"a {len(msg)}-byte denial: {msg[:300]}")
            else:
                r.verdict(name, True, f"denied {code} in {secs:.2f}s: {msg[:200]}")
        if not healthy(base):
            r.verdict(name + "/healthz", False, "the service did not answer /healthz within 2 s")


MODEL_FOR_UPLOAD = ""


def main():
    global MODEL_FOR_UPLOAD
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="", help="base URL of a serve with the job routes (cluster of H100s)")
    ap.add_argument("--token-file", default="")
    ap.add_argument("--upload-model", default="models/vgg.onnx", help="the ONNX file the upload cases send")
    ap.add_argument("--webhook", default="", help="base URL of a serve with --k8s-share and --k8s-webhook-auth none")
    ap.add_argument("--review", default="tests/k8s/review-create-pod.json")
    ap.add_argument("--only", default="", help="regex of case names")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    MODEL_FOR_UPLOAD = a.upload_model
    r = Runner(a.timeout)
    if a.jobs:
        headers = {}
        if a.token_file:
            headers["Authorization"] = "Bearer " + open(a.token_file).read().strip()
        run_jobs(r, a.jobs, headers, a.only, a.timeout)
    if a.webhook:
        run_webhook(r, a.webhook, a.review, a.only, a.timeout)
    print(f"{r.ran} check(s), {r.bad} failing")
    return 1 if r.bad else 0


if __name__ == "__main__":
    sys.exit(main())
