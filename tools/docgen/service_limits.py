#!/usr/bin/env python3
"""docs/security.md's table of the service limits that have no flag, probed on a live
`gpucast serve` at each limit and one past it (stdlib only). Prints a markdown table whose
answers are what this build sends: the status code and the error message.

Usage: tools/docgen/service_limits.py BUILD/gpucast
Starts `gpucast train --algo ridge` (fast; no prediction is shown here; on $GPUCAST_DATA or ../shared/data) and `gpucast serve
--cluster "2x H100" --model-root models` on 127.0.0.1 in a scratch directory; stops it at exit.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(binary, tmp):
    p = os.path.join(tmp, "p.json")
    subprocess.run([binary, "train", "--quiet", "--algo", "ridge", "--out", p], check=True, stdout=subprocess.DEVNULL)
    out = open(os.path.join(tmp, "out"), "w")
    err = open(os.path.join(tmp, "err"), "w")
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "jobs.db"),
                             "--predictor", p, "--cluster", "2x H100", "--model-root",
                             os.path.join(ROOT, "models")], stdout=out, stderr=err)
    for _ in range(300):
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(os.path.join(tmp, "out")).read())
        if m:
            return proc, int(m[1])
        if proc.poll() is not None:
            sys.exit("service_limits.py: serve exited: " + open(os.path.join(tmp, "err")).read())
        time.sleep(0.1)
    proc.kill()
    sys.exit("service_limits.py: serve did not say 'listening on'")


def raw(port, data):
    """Sends raw request bytes, returns (status, error message or '')."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        got = b""
        while True:
            try:
                c = s.recv(65536)
            except ConnectionResetError:
                break
            if not c:
                break
            got += c
            head, sep, body = got.partition(b"\r\n\r\n")
            if sep:
                m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                if m and len(body) >= int(m[1]):
                    break
    status = int(got.split(b" ", 2)[1])
    body = got.partition(b"\r\n\r\n")[2]
    try:
        return status, json.loads(body).get("error", "")
    except ValueError:
        return status, ""


def call(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = dict(headers or {})
    if body is not None:
        h.setdefault("Content-Type", "application/json")
        body = body if isinstance(body, (bytes, str)) else json.dumps(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data).get("error", "") if data else ""
    except (ValueError, AttributeError):
        return r.status, ""


def answer(status, msg):
    return f"{status}" + (f" `{msg}`" if msg else "")


def main():
    binary = os.path.realpath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="gpucast-limits.")
    proc, port = start(binary, tmp)
    rows = []
    try:
        def fields(n):  # n header fields in all (Host and Connection included)
            return ("GET /healthz HTTP/1.1\r\nHost: x\r\n" + "".join(f"X-F{i}: v\r\n" for i in range(n - 2))
                    + "Connection: close\r\n\r\n").encode()

        def head_of(size, line=8192):  # a request head of exactly `size` bytes (final CRLFCRLF
            # included) whose longest header line is `line` bytes (CRLF included)
            base = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            pads, left, i = [], size - len(base) - 2, 0
            while left > 0:
                n = min(line, left)
                if 0 < left - n < 12:  # the last line needs room for its name
                    n -= 12
                pads.append(f"X-P{i:03d}: " + "a" * (n - 10) + "\r\n")
                left, i = left - n, i + 1
            return (base + "".join(pads) + "\r\n").encode()

        def keep_alive(n):  # n requests on one connection: how many are answered
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * n)
                got = b""
                while True:
                    c = s.recv(1 << 20)
                    if not c:
                        break
                    got += c
            return got.count(b"HTTP/1.1 200 OK"), got.count(b"Connection: close")
        rows.append(("header fields", "100", answer(*raw(port, fields(100))), answer(*raw(port, fields(101)))))
        rows.append(("request line + headers", "16384 bytes", answer(*raw(port, head_of(16384))),
                     answer(*raw(port, head_of(16385)))))
        rows.append(("one header line, CRLF included", "8192 bytes", answer(*raw(port, head_of(8500, 8192))),
                     answer(*raw(port, head_of(8500, 8193)))))
        answered, closed = keep_alive(1001)
        rows.append(("requests per keep-alive connection", "1000",
                     f"{answered} answered, the last with `Connection: close` ({closed})",
                     "the connection is closed: the rest are not read"))
        job = {"model": "vgg.onnx", "batch": 128}
        nested = lambda d: "[" * d + "]" * d
        rows.append(("JSON nesting", "32 levels", answer(*call(port, "POST", "/v1/predict", nested(32))),
                     answer(*call(port, "POST", "/v1/predict", nested(33)))))
        rows.append(("jobs in one `GET /v1/jobs` page", "`?limit=1000`", answer(*call(port, "GET", "/v1/jobs?limit=1000")),
                     answer(*call(port, "GET", "/v1/jobs?limit=1001"))))
        rows.append(("`Idempotency-Key`", "255 bytes",
                     answer(*call(port, "POST", "/v1/jobs", {**job, "gpus": 2}, {"Idempotency-Key": "k" * 255})),
                     answer(*call(port, "POST", "/v1/jobs", {**job, "gpus": 2}, {"Idempotency-Key": "k" * 256}))))
        ob = lambda n: {"gpu_util": 50, "source": "slurm", "samples": n}
        rows.append(("samples of one observation", "1000000",
                     answer(*call(port, "POST", "/v1/jobs/1/observations", ob(1000000))),
                     answer(*call(port, "POST", "/v1/jobs/1/observations", ob(1000001)))))
        # Job 1 has 10^6 samples: 99 more observations of 10^6 reach 10^8, one sample more is over.
        last = None
        for _ in range(99):
            last = call(port, "POST", "/v1/jobs/1/observations", ob(1000000))
        rows.append(("samples of one job, all observations", "100000000", answer(*last),
                     answer(*call(port, "POST", "/v1/jobs/1/observations", ob(1)))))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        subprocess.run(["rm", "-rf", tmp])
    print("| limit | value | at the limit | one past it |")
    print("|---|---|---|---|")
    for name, at, ok, over in rows:
        print(f"| {name} | {at} | {ok or '—'} | {over} |")


if __name__ == "__main__":
    main()
