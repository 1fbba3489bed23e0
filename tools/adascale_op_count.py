#!/usr/bin/python3
"""Count, by running it, the work AdaptDL's AdaScale adds to a one-replica training step, to check the
hand count of tools/pollux_adaptdl_overhead.py (OPS).

usage: /usr/bin/python3 tools/adascale_op_count.py SRC

SRC is petuum/adaptdl at commit de25dcc, e.g.
  git -C adaptdl archive de25dcc adaptdl benchmark/models | tar -x -C /tmp/adaptdl
  /usr/bin/python3 tools/adascale_op_count.py /tmp/adaptdl
AdaScale (SRC/adaptdl/adaptdl/torch/adascale.py, unchanged; it imports only torch and numpy) wraps the
optimizer of ResNet-18 (SRC/benchmark/models/cifar10/models/resnet.py, SGD with momentum as
cifar10/main.py) and of NeuMF (SRC/benchmark/models/ncf/model.py, NeuMF-end, Adam as ncf/main.py), on
the CPU, in a one-process gloo group (AdaScale all-reduces its local statistics). After warm-up steps
(so that the previous gradients exist and Adam's step count is past 5), one step is run under a
TorchDispatchMode that records every ATen operator the step dispatches, with the bytes of its tensor
arguments (read) and results (written); the same step without AdaScale (forward, backward,
optimizer.step) is counted the same way. The difference, per parameter tensor, is what AdaScale adds:
compute operators (views, which launch nothing, left out; .item() and bool() of a tensor appear as
_local_scalar_dense, a device-to-host copy on a GPU) and passes over the gradients' bytes.
Not seen on the CPU: AdaptiveDataParallel's CUDA event per parameter (parallel.py 82-91). This
PyTorch's optimizer.zero_grad() zeroes all gradients with one foreach call, where the PyTorch of
Pollux' containers (NGC 20.03/20.10: 1.5/1.7) zeroed them one tensor at a time.
"""
import collections
import os
import sys
import tempfile
import types
import warnings

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

VIEWS = {"detach", "alias", "select", "view", "as_strided", "_reshape_alias", "t", "expand", "slice",
         "unsqueeze", "squeeze", "transpose", "permute", "_unsafe_view", "lift_fresh", "empty", "empty_like",
         "empty_strided", "new_empty", "new_empty_strided"}


class Recorder(TorchDispatchMode):
    """Counts operators and their bytes; an operator on a tainted tensor (Adam's step count, a tensor in
    this PyTorch, or a result of one) is counted apart, in `step_ops`, and taints its results."""
    def __init__(self, tainted):
        super().__init__()
        self.ops = collections.Counter()
        self.step_ops = collections.Counter()
        self.bytes = 0
        self.tainted = list(tainted)

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        flat = list(args) + list((kwargs or {}).values())
        if any(isinstance(a, torch.Tensor) and any(a is t for t in self.tainted) for a in flat):
            self.step_ops[name] += 1
            self.tainted += [o for o in (out if isinstance(out, (list, tuple)) else [out])
                             if isinstance(o, torch.Tensor)]
        elif name not in VIEWS:
            self.ops[name] += 1
            seen = set()

            def nbytes(x):
                if isinstance(x, torch.Tensor) and id(x) not in seen:
                    seen.add(id(x))
                    return x.numel() * x.element_size()
                if isinstance(x, (list, tuple)):
                    return sum(nbytes(y) for y in x)
                return 0
            self.bytes += nbytes(list(args) + list((kwargs or {}).values()))
            seen.clear()
            self.bytes += nbytes(out)
        return out


def load(path, name):
    mod = types.ModuleType(name)
    mod.__file__ = path
    exec(compile(open(path).read(), path, "exec"), mod.__dict__)
    return mod


def count(model, make_batch, loss_fn, opt, adascale_cls):
    params = [p for p in model.parameters() if p.requires_grad]
    if adascale_cls is not None:
        ddp = types.SimpleNamespace(require_backward_grad_sync=True)
        adascale_cls(ddp, opt, num_replicas=1, patch_optimizer=True)

    def step():
        x, y = make_batch()
        loss = loss_fn(model(*x), y)
        loss.backward()
        opt.step()
        if adascale_cls is None:
            opt.zero_grad()

    for _ in range(7):  # previous gradients exist; Adam's step count past 5 (adascale.py 231, 382)
        step()
    steps = [st["step"] for st in opt.state.values()
             if isinstance(st, dict) and isinstance(st.get("step"), torch.Tensor)]
    r = Recorder(steps)
    with r:
        step()
    return len(params), sum(p.numel() for p in params), r


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    store = tempfile.NamedTemporaryFile(delete=False)
    dist.init_process_group("gloo", init_method="file://" + store.name, rank=0, world_size=1)
    adascale = load(os.path.join(src, "adaptdl/adaptdl/torch/adascale.py"), "adascale").AdaScale

    sys.path.insert(0, os.path.join(src, "benchmark/models/cifar10"))
    from models.resnet import ResNet18  # noqa: E402
    sys.path.pop(0)
    ncf = load(os.path.join(src, "benchmark/models/ncf/model.py"), "ncf_model")

    def resnet(with_adascale):
        torch.manual_seed(0)
        m = ResNet18()
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)  # cifar10/main.py 77
        return count(m, lambda: ((torch.randn(2, 3, 32, 32),), torch.randint(0, 10, (2,))),
                     torch.nn.functional.cross_entropy, opt, adascale if with_adascale else None)

    def neumf(with_adascale):
        torch.manual_seed(0)
        m = ncf.NCF(6040, 3706, 32, 3, 0.0, "NeuMF-end")  # ncf/main.py defaults, config.py ml-1m
        opt = torch.optim.Adam(m.parameters(), betas=(0.9, 0.999), lr=0.001)  # ncf/main.py 109
        return count(m, lambda: ((torch.randint(0, 6040, (4,)), torch.randint(0, 3706, (4,))),
                                 torch.rand(4)),
                     torch.nn.functional.binary_cross_entropy_with_logits, opt,
                     adascale if with_adascale else None)

    print("| job (optimizer) | parameter tensors | operators added per step | per tensor | "
          "passes over the gradients per tensor | operators AdaScale adds (count) | on Adam's step tensor |")
    print("|---|---|---|---|---|---|---|")
    for name, job in (("ResNet-18 (SGD)", resnet), ("NeuMF (Adam)", neumf)):
        t, n, plain = job(False)
        _, _, ada = job(True)
        added = ada.ops - plain.ops
        removed = plain.ops - ada.ops
        total = sum(added.values()) - sum(removed.values())
        passes = (ada.bytes - plain.bytes) / (4 * n)
        print("| %s | %d | %d | %.1f | %.1f | %s | %s |" % (
            name, t, total, total / t, passes,
            ", ".join("%s %+d" % (k, v) for k, v in sorted(added.items())) +
            ("; " + ", ".join("%s -%d" % (k, v) for k, v in sorted(removed.items())) if removed else ""),
            ", ".join("%s %+d" % (k, v) for k, v in sorted((ada.step_ops - plain.step_ops).items())) or "-"))
    dist.destroy_process_group()
    if os.path.exists(store.name):
        os.unlink(store.name)


if __name__ == "__main__":
    main()
