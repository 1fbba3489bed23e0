"""HTTP calls of the gpucast service API (docs/api.md), one method per route."""
import json
import urllib.error
import urllib.parse
import urllib.request

MAX_REPLY_BYTES = 64 << 20  # a reply larger than this is refused, not read


class GpucastError(Exception):
    """An error answer of the service (status, its "error" message), or status 0 when none came."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.message = message


def models_field(models):
    """Model files as `gpucast predict --model` takes them (a file given k times is one network run
    k times per step) -> the job's "model" or "models" field, in first-seen order."""
    if not models:
        raise ValueError("at least one model file")
    order, passes = [], {}
    for m in models:
        if m not in passes:
            order.append(m)
            passes[m] = 0
        passes[m] += 1
    if len(order) == 1 and passes[order[0]] == 1:
        return {"model": order[0]}
    return {"models": [{"path": m, "repeat": passes[m]} for m in order]}


class Client:
    def __init__(self, url="http://127.0.0.1:8080", token=None, timeout=30.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url '{url}': want http://HOST:PORT")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------------------
    def request(self, method, path, body=None, content_type="application/json", headers=None):
        """One request; returns the decoded JSON reply (or text for /metrics)."""
        data = None
        h = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode()
            h["Content-Type"] = content_type
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read(MAX_REPLY_BYTES + 1)
                ctype = r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            raw = e.read(MAX_REPLY_BYTES)
            try:
                message = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode("utf-8", "replace").strip() or e.reason
            raise GpucastError(e.code, message) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise GpucastError(0, f"{self.url}: cannot reach the gpucast service: {reason}") from None
        if len(raw) > MAX_REPLY_BYTES:
            raise GpucastError(0, f"{method} {path}: reply larger than {MAX_REPLY_BYTES} bytes")
        if "json" not in ctype:
            return raw.decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise GpucastError(0, f"{method} {path}: reply is not JSON: {e}") from None

    @staticmethod
    def job_body(models, batch=1, amp=False, dims=None, attrs=None, gpus=None, name=None, mem_mib=None,
                 duration_s=None, gpu=None, mig=None, nodes=None, interconnect=None, level=None):
        body = dict(models_field(models))
        body["batch"] = batch
        if amp:
            body["amp"] = True
        if dims:
            body["dims"] = dict(dims)
        if attrs:
            body["attrs"] = dict(attrs)
        for k, v in (("gpus", gpus), ("name", name), ("mem_mib", mem_mib), ("duration_s", duration_s), ("gpu", gpu),
                     ("mig", mig), ("nodes", nodes), ("interconnect", interconnect), ("level", level)):
            if v is not None:
                body[k] = v
        return body

    # -- routes ------------------------------------------------------------------------------
    def predict(self, models, batch=1, **kw):
        """POST /v1/predict: the fields of `gpucast predict --json` (gpu_util, interval, gpu_mem_mib,
        data_parallel, workload, expected_error_unseen, ...) and "predicted_util", ...; no job is made.
        Keywords: amp, dims, attrs, gpu, gpus, mig, nodes, interconnect, level."""
        return self.request("POST", "/v1/predict", self.job_body(models, batch, **kw))

    def predict_upload(self, onnx_bytes, batch=1, **query):
        """POST /v1/predict with the ONNX file as the body (no model root needed)."""
        q = urllib.parse.urlencode({"batch": batch, **query})
        return self.request("POST", "/v1/predict?" + q, bytes(onnx_bytes), "application/octet-stream")

    def submit(self, models, batch=1, idempotency_key=None, **kw):
        """POST /v1/jobs: the job created (201), or the first one for a repeated Idempotency-Key."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", "/v1/jobs", self.job_body(models, batch, **kw), headers=headers)

    def store_model(self, onnx_bytes):
        """POST /v1/models: store an ONNX file by its content; {"model": "sha256:<hex>", ...}. Any request
        (a job's model, a pod's gpucast.io/model annotation) may then name it so."""
        return self.request("POST", "/v1/models", bytes(onnx_bytes), "application/octet-stream")

    def job(self, job_id):
        return self.request("GET", f"/v1/jobs/{int(job_id)}")

    def jobs(self, state=None, limit=100):
        """Every job (optionally in one state), paging through GET /v1/jobs."""
        after = None
        while True:
            q = {"limit": limit}
            if state:
                q["state"] = state
            if after is not None:
                q["after"] = after
            page = self.request("GET", "/v1/jobs?" + urllib.parse.urlencode(q))
            yield from page["jobs"]
            after = page.get("next_after")
            if after is None:
                return

    def cancel(self, job_id):
        return self.request("DELETE", f"/v1/jobs/{int(job_id)}")

    def observe(self, job_id, gpu_util, source, samples=1, gpu=None, share_pct=None, overuse_margin=None,
                idempotency_key=None):
        """POST /v1/jobs/{id}/observations: a measured utilization (percent) of a job; source is
        nvidia-smi, dcgm or slurm."""
        body = {"gpu_util": gpu_util, "source": source, "samples": samples}
        for k, v in (("gpu", gpu), ("share_pct", share_pct), ("overuse_margin", overuse_margin)):
            if v is not None:
                body[k] = v
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", f"/v1/jobs/{int(job_id)}/observations", body, headers=headers)

    def reload(self):
        """POST /v1/admin/reload: read the predictor file again."""
        return self.request("POST", "/v1/admin/reload")

    def cluster(self):
        return self.request("GET", "/v1/cluster")

    def health(self):
        return self.request("GET", "/healthz")

    def metrics(self):
        """GET /metrics: Prometheus text."""
        return self.request("GET", "/metrics")
