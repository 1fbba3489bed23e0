"""A stub of kube-apiserver's pod list and watch, on loopback over HTTPS, for tests/k8s_test.sh.

GET /api/v1/pods?fieldSelector=spec.nodeName!=[&watch=1&resourceVersion=RV...] with
"Authorization: Bearer TOKEN": the list is LIST_FILE's pods (a v1 PodList, resourceVersion "1");
a watch streams, chunked as kube-apiserver does, every line appended to EVENTS_FILE (one
{"type", "object"} event per line) until its timeoutSeconds. Prints "listening on PORT".
Usage: stub_apiserver.py CERT KEY TOKEN LIST_FILE EVENTS_FILE
"""
import http.server
import json
import os
import ssl
import sys
import time
import urllib.parse

CERT, KEY, TOKEN, LIST_FILE, EVENTS_FILE = sys.argv[1:6]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def fail(self, code, message):
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                           "message": message}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.fail(401, "Unauthorized")
        if url.path != "/api/v1/pods" or q.get("fieldSelector") != ["spec.nodeName!="]:
            return self.fail(400, "want /api/v1/pods?fieldSelector=spec.nodeName!=")
        if q.get("watch") != ["1"]:
            with open(LIST_FILE) as f:
                items = json.load(f)
            body = json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                               "items": items}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        end = time.time() + min(float(q.get("timeoutSeconds", ["30"])[0]), 30)
        sent = 0
        try:
            while time.time() < end:
                with open(EVENTS_FILE) as f:
                    lines = f.read().splitlines()
                for line in lines[sent:]:
                    data = (line + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                sent = len(lines)
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("listening on %d" % server.server_address[1], flush=True)
server.serve_forever()
