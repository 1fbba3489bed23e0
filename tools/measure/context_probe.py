#!/usr/bin/python3
"""The fixed part of a training process's GPU memory, stage by stage, as nvidia-smi reports it.

usage: python3 tools/measure/context_probe.py --out FILE.json [--gpu 0]

One process on an otherwise idle GPU: nvidia-smi's memory.used of the GPU before CUDA is touched,
then after each stage, with PyTorch's own reserved bytes beside it (what the caching allocator holds;
the rest of the difference is the CUDA context, the loaded kernels and the libraries' handles and
workspaces, which issue 37's `context`, `cublas_workspace` and `cudnn` components predict):
  init        torch.cuda.init() and a 1-element tensor: the context
  cublas      a 1024 x 1024 fp32 matmul (cuBLAS's handle and workspace)
  cublas_fp16 the same in fp16 (tensor-core kernels loaded)
  cudnn       a 3x3 convolution forward and backward on [8, 64, 56, 56] (cuDNN's handle and kernels)
  autocast    a small conv + linear network's training step under torch.autocast with GradScaler
CUDA_MODULE_LOADING (lazy or eager kernel loading: PyTorch sets lazy from CUDA 11.7 unless the user
set it) is recorded. Each stage ends with torch.cuda.synchronize() and waits 0.5 s for nvidia-smi's
reading to settle. Writes one JSON object; exit status 2 when there is no CUDA device or nvidia-smi.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def smi_used(gpu):
    r = subprocess.run(["nvidia-smi", f"--id={gpu}", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError(f"nvidia-smi: {(r.stdout + r.stderr).strip()[:200]}")
    return float(r.stdout.strip().splitlines()[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu", type=int, default=0)
    a = ap.parse_args(argv)
    res = {"cuda_module_loading_env": os.environ.get("CUDA_MODULE_LOADING"), "stages": []}
    try:
        res["before_mib"] = smi_used(a.gpu)
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device visible to torch")
        res.update(torch=torch.__version__, torch_cuda=torch.version.cuda)

        def stage(name, fn):
            fn()
            torch.cuda.synchronize()
            time.sleep(0.5)
            used = smi_used(a.gpu)
            res["stages"].append({"stage": name, "smi_used_mib": used, "above_before_mib": used - res["before_mib"],
                                  "torch_reserved_mib": torch.cuda.memory_reserved() / 2**20,
                                  "torch_allocated_mib": torch.cuda.memory_allocated() / 2**20})

        dev = torch.device("cuda", 0)
        keep = []
        stage("init", lambda: (torch.cuda.init(), keep.append(torch.zeros(1, device=dev))))
        x = torch.randn(1024, 1024, device=dev)
        stage("cublas", lambda: keep.append(x @ x))
        xh = x.half()
        stage("cublas_fp16", lambda: keep.append(xh @ xh))

        def conv():
            c = torch.nn.Conv2d(64, 64, 3, padding=1).to(dev)
            inp = torch.randn(8, 64, 56, 56, device=dev, requires_grad=True)
            c(inp).sum().backward()
            keep.append(c)
        stage("cudnn", conv)

        def amp_step():
            net = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                      torch.nn.Linear(32 * 30 * 30, 10)).to(dev)
            opt = torch.optim.SGD(net.parameters(), lr=0.01)
            scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
            with torch.autocast("cuda"):
                loss = net(torch.randn(16, 3, 32, 32, device=dev)).float().mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            keep.append(net)
        stage("autocast", amp_step)
        res["cuda_module_loading"] = os.environ.get("CUDA_MODULE_LOADING")  # torch may set it at init
    except Exception as e:  # noqa: BLE001 - the error is the result
        res["error"] = f"{type(e).__name__}: {e}"
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print("context_probe: " + (res.get("error") or ", ".join(f"{s['stage']} +{s['above_before_mib']:.0f} MiB"
                                                              for s in res["stages"])))
    return 2 if "error" in res else 0


if __name__ == "__main__":
    sys.exit(main())
