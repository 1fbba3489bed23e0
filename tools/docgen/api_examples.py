#!/usr/bin/env python3
"""docs/api.md's example answers, as this build gives them (stdlib only): trains a predictor with
`gpucast train`'s defaults on the shared measurements, starts `gpucast serve --listen 127.0.0.1:0
--db jobs.db --predictor p.json --cluster "2x H100" --model-root models` in a scratch directory,
sends the requests of one section of the doc, and prints each request, the status and the reply
(JSON with sorted keys) as markdown. The Unix-time fields (submitted_at, started_at) are left out:
they change every run.

Usage: tools/docgen/api_examples.py BUILD/gpucast SECTION
SECTION: submit | predict | cluster | observe | reload | errors

The trained predictor is kept in $TMPDIR/gpucast-docgen-api/ under the SHA-256 of the binary and
the listing (name, size, mtime) of $GPUCAST_DATA, so the sections of one `make docs` or `make test`
train once.
"""
import hashlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMES = ("submitted_at", "started_at", "finished_at")


def predictor(binary):
    data = os.environ.get("GPUCAST_DATA", os.path.join(ROOT, "..", "shared", "data"))
    h = hashlib.sha256(open(binary, "rb").read())
    for d, _, fs in sorted(os.walk(data)):
        for f in sorted(fs):
            st = os.stat(os.path.join(d, f))
            h.update(f"{os.path.relpath(os.path.join(d, f), data)} {st.st_size} {st.st_mtime_ns}\n".encode())
    cache = os.path.join(tempfile.gettempdir(), "gpucast-docgen-api")
    os.makedirs(cache, exist_ok=True)
    p = os.path.join(cache, h.hexdigest()[:24] + ".json")
    if not os.path.exists(p):
        subprocess.run([binary, "train", "--quiet", "--out", p + ".tmp"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        os.replace(p + ".tmp", p)
    return p


class Service:
    def __init__(self, binary, tmp, extra=()):
        self.tmp = tmp
        self.out, self.err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "jobs.db"), "--predictor",
             os.path.join(tmp, "p.json"), "--cluster", "2x H100", "--model-root", "models", *extra],
            stdout=open(self.out, "w"), stderr=open(self.err, "w"), cwd=ROOT)
        for _ in range(300):
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(self.out).read())
            if m:
                self.port = int(m[1])
                return
            if self.proc.poll() is not None:
                sys.exit("api_examples.py: serve exited: " + open(self.err).read())
            time.sleep(0.1)
        self.proc.kill()
        sys.exit("api_examples.py: serve did not say 'listening on'")

    def call(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        h = dict(headers or {})
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            reply = json.loads(data)
        except ValueError:
            reply = data.decode()
        return r, reply

    def log(self):
        return [l for l in open(self.err).read().splitlines() if l.startswith("gpucast serve: job ")]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


SCRATCH = None  # the scratch directory, shown as DIR (it changes every run)


def shown(reply):
    return _shown(reply).replace(SCRATCH, "DIR") if SCRATCH else _shown(reply)


def _shown(reply):
    if isinstance(reply, dict):
        return json.dumps({k: v for k, v in reply.items() if not (k in TIMES and v is not None)},
                          sort_keys=True)
    return reply if isinstance(reply, str) else json.dumps(reply, sort_keys=True)


def show(svc, method, path, body=None, headers=None, extra_headers=()):
    r, reply = svc.call(method, path, body, headers)
    req = f"{method} {path}" + (f" {json.dumps(body)}" if body is not None else "")
    print(f"`{req}` → `{r.status} {r.reason}`" +
          "".join(f", `{h}: {r.getheader(h)}`" for h in extra_headers if r.getheader(h)))
    print("```json")
    print(shown(reply))
    print("```")
    return reply


def raw(port, data):
    """Raw request bytes -> (status, reply body)."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        got = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            got += c
            head, sep, body = got.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if sep and m and len(body) >= int(m[1]):
                break
    head, _, body = got.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()


def errors(svc):
    """One request per error the API answers, as a markdown table."""
    rows = []

    def js(method, path, body=None, ctype=None, shown_body=None):
        h = {"Content-Type": ctype} if ctype else None
        c = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=60)
        data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
        c.request(method, path, body=data, headers=dict(h or {}, **({} if ctype or body is None else
                                                                      {"Content-Type": "application/json"})))
        r = c.getresponse()
        reply = r.read().decode()
        c.close()
        req = f"{method} {path}" + (f" {shown_body if shown_body is not None else data}" if data is not None else "")
        if r.status < 400:
            return  # a step toward the next error (a job to cancel)
        rows.append((r.status, req + (f" ({ctype})" if ctype else ""), json.loads(reply)["error"]))

    def rw(what, data):
        status, body = raw(svc.port, data)
        rows.append((status, what, json.loads(body)["error"]))

    js("POST", "/v1/predict", '{"model": "vgg.onnx", "batch": }')
    js("POST", "/v1/predict", {"model": "vgg.onnx", "batch": 8, "colour": "red"})
    js("POST", "/v1/predict", {"model": "vgg.onnx", "batch": 0})
    js("POST", "/v1/predict", {"model": "vgg.onnx", "batch": 8, "attrs": {"loader_threads": 2}})
    js("GET", "/v1/jobs?limit=0")
    rw("GET /v1/jobs/%FF", b"GET /v1/jobs/%FF HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    js("POST", "/v1/predict", "[" * 40 + "]" * 40, shown_body="[[[... (40 deep)")
    rw("two different Content-Length headers",
       b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}")
    rw("a bare LF after the request line", b"GET /healthz HTTP/1.1\nHost: x\n\n")
    js("GET", "/v1/jobs/99")
    js("GET", "/v2/x")
    js("PUT", "/v1/jobs")
    js("POST", "/v1/jobs", {"model": "pointnet.onnx", "batch": 32})
    js("DELETE", "/v1/jobs/1")
    js("DELETE", "/v1/jobs/1")
    js("POST", "/v1/predict", "x" * 1048577, shown_body="(1 MiB + 1 byte)")
    js("POST", "/v1/predict", "hello", ctype="text/plain")
    js("POST", "/v1/predict", {"model": "/etc/shadow", "batch": 1})
    js("POST", "/v1/predict?batch=8", b"not a model", ctype="application/octet-stream",
       shown_body="(11 bytes that are not ONNX)")
    js("POST", "/v1/jobs", {"model": "vgg.onnx", "batch": 8, "gpus": 3})
    js("POST", "/v1/jobs", {"model": "vgg.onnx", "batch": 8, "gpu": "T4"})
    rw("101 header fields", b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-F: v\r\n" * 100 + b"\r\n")
    print("| status | request | answer |")
    print("|---|---|---|")
    for status, req, msg in rows:
        esc = lambda t: t.replace("|", "\\|")
        print(f"| {status} | `{esc(req)}` | `{esc(msg)}` |")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, section = os.path.realpath(sys.argv[1]), sys.argv[2]
    global SCRATCH
    tmp = SCRATCH = tempfile.mkdtemp(prefix="gpucast-docgen-api.")
    try:
        os.symlink(predictor(binary), os.path.join(tmp, "p.json"))
        svc = Service(binary, tmp)
        try:
            run(section, svc, binary)
        finally:
            svc.stop()
    finally:
        subprocess.run(["rm", "-rf", tmp])


def run(section, svc, binary):
    if section == "submit":
        show(svc, "POST", "/v1/jobs", {"model": "resnet50.onnx", "batch": 64, "name": "r50", "duration_s": 3600},
             extra_headers=("Location",))
        show(svc, "POST", "/v1/jobs", {"model": "vgg.onnx", "batch": 128, "gpus": 2}, extra_headers=("Location",))
        print("The service's log (stderr):")
        print("```")
        print("\n".join(svc.log()))
        print("```")
    elif section == "predict":
        show(svc, "POST", "/v1/predict", {"model": "bert.onnx", "batch": 8, "dims": {"seq": 384}, "gpu": "T4"})
        cli = subprocess.run([binary, "predict", "--quiet", "--predictor", os.path.join(svc.tmp, "p.json"),
                              "--model", "models/bert.onnx", "--batch", "8", "--dim", "seq=384", "--gpu", "T4",
                              "--json"], capture_output=True, text=True, check=True, cwd=ROOT)
        r = json.loads(cli.stdout)
        print(f"`gpucast predict --model models/bert.onnx --batch 8 --dim seq=384 --gpu T4 --json`: "
              f"`gpu_util` {r['gpu_util']}, `gpu_mem_mib` {r['gpu_mem_mib']}, interval "
              f"[{r['interval']['low']}, {r['interval']['high']}]")
        print()
        show(svc, "POST", "/v1/predict", {"models": [{"path": "dcgan_generator.onnx"},
                                                     {"path": "dcgan_discriminator.onnx", "repeat": 3}],
                                          "batch": 128})
        show(svc, "POST", "/v1/predict", {"models": [{"path": "dcgan_generator.onnx"},
                                                     {"path": "dcgan_discriminator.onnx", "repeat": 3}],
                                          "batch": 128, "gpu": "RTX3090"})
        show(svc, "POST", "/v1/predict", {"model": "dcgan_generator.onnx", "batch": 128})
        show(svc, "POST", "/v1/predict", {"model": "vgg.onnx"})
        show(svc, "POST", "/v1/predict", {"model": "vgg.onnx", "batch": 128, "gpu": "RTX3900"})
        show(svc, "POST", "/v1/predict", {"model": "/etc/shadow", "batch": 1})
    elif section == "cluster":
        svc.call("POST", "/v1/jobs", {"model": "resnet50.onnx", "batch": 64, "name": "r50"})
        svc.call("POST", "/v1/jobs", {"model": "pointnet.onnx", "batch": 32})
        svc.call("POST", "/v1/jobs", {"model": "vgg.onnx", "batch": 128, "gpus": 2})
        show(svc, "GET", "/v1/cluster")
        show(svc, "GET", "/healthz")
    elif section == "observe":
        show(svc, "POST", "/v1/jobs", {"model": "vgg.onnx", "batch": 96})
        show(svc, "POST", "/v1/jobs/1/observations", {"gpu_util": 14.4, "source": "slurm", "samples": 120})
        _, metrics = svc.call("GET", "/metrics")
        print("`GET /metrics` then has:")
        print("```")
        for line in metrics.splitlines():
            if re.match(r'gpucast_(prediction_abs_error_(bucket\{le="(50|75)"\}|sum|count)|observations_total)', line):
                print(line)
        print("```")
    elif section == "reload":
        show(svc, "POST", "/v1/admin/reload")
        with open(os.path.join(svc.tmp, "bad.json"), "w") as f:
            f.write("[]")
        os.unlink(os.path.join(svc.tmp, "p.json"))
        os.symlink(os.path.join(svc.tmp, "bad.json"), os.path.join(svc.tmp, "p.json"))
        show(svc, "POST", "/v1/admin/reload")
    elif section == "errors":
        errors(svc)
    else:
        sys.exit(f"api_examples.py: unknown section '{section}' (want submit, predict, cluster, observe, reload, errors)")


if __name__ == "__main__":
    main()
