"""A small client of the gpucast HTTP service (docs/api.md), standard library only.

    from gpucast_client import Client
    c = Client("http://127.0.0.1:8080")            # token=... when serve has --token-file
    p = c.predict(["resnet50.onnx"], batch=32)      # {"predicted_util": ..., "predicted_util_interval": [...], ...}
    job = c.submit(["resnet50.onnx"], batch=32, gpus=1, name="r50")
    for j in c.jobs(state="queued"): ...

Errors the service answers come back as GpucastError(status, message) with its message;
a service that cannot be reached is GpucastError(0, reason). Command line: python3 -m gpucast_client.
"""
from .client import Client, GpucastError, models_field

__all__ = ["Client", "GpucastError", "models_field"]
__version__ = "0.1.0"
