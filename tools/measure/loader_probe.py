#!/usr/bin/python3
"""Measure a training job's input pipeline on the CPU: loader_ms_per_sample, without a GPU.

usage: python3 tools/measure/loader_probe.py (--image-folder DIR | --dataset MODULE:NAME | --workload MODEL)
           [--transform imagenet|cifar|tensor] [--arg KEY=VALUE ...] [--path DIR ...]
           [--collate MODULE:NAME] [--workers 2] [--batch 32] [--seconds 10] [--warmup 2] [--json]

Iterates a PyTorch DataLoader over the dataset for --seconds with --workers worker processes and
nothing consuming the batches, and times every sample inside the worker that produces it:
  loader_ms_per_sample  CPU milliseconds of the worker thread per sample (__getitem__ plus its share
                        of collate): what `gpucast predict --attr loader_ms_per_sample=X` takes.
                        W workers, each on its own core, deliver at most W * 1000 / X samples per s.
                        CPU time, so other load on the probing machine does not inflate it.
  wall_ms_per_sample    the wall time of the same work: more than the CPU time when the worker waits
                        for a core (a busy machine) or for I/O (files not in the page cache).
  samples_per_s         what the loader delivered end to end (batch transfer to the main process
                        included), beside bound_samples_per_s = W * 1000 / loader_ms_per_sample.
The first --warmup batches are not counted (worker start-up, cold caches).

--image-folder DIR   a folder of images (flat, or one sub-folder per class as torchvision's
                     ImageFolder), decoded with PIL and transformed by --transform:
                     imagenet = RandomResizedCrop(224), flip, ToTensor, Normalize (default);
                     cifar = RandomCrop(32, padding 4), flip, ToTensor, Normalize; tensor = ToTensor.
--dataset MODULE:NAME  your own dataset: NAME in MODULE (a dotted module on --path / PYTHONPATH, or a
                     file path.py) is a Dataset class, a function returning a Dataset, or a Dataset
                     object; --arg KEY=VALUE are passed as keyword arguments (values parsed as JSON
                     when they parse, else strings). Map-style and iterable datasets both work.
--workload MODEL     the input pipeline the measurement harness (jobs.py) builds for a catalog workload
                     with a CPU loader: EfficientNet, MobileNetV2, VGG (CIFAR crop/flip/normalise of a
                     32x32 image), DCGAN (64x64 image to tensor), PointNet (np.loadtxt of a 2,500-point
                     text file), NeuMF (one positive + 4 sampled negatives: 5 rows per sample).
"""
import argparse
import importlib
import importlib.util
import json
import math
import multiprocessing
import os
import sys
import time

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".tif", ".tiff", ".webp")


class ProbeError(Exception):
    """A bad argument or a dataset that cannot be probed; the message says which and why."""


# ---------------------------------------------------------------- timing wrappers (run in the workers)

class Counters:
    """Shared between the workers and the parent (fork/spawn inheritance): wall s, CPU s, samples."""

    def __init__(self):
        self.wall = multiprocessing.Value("d", 0.0)
        self.cpu = multiprocessing.Value("d", 0.0)
        self.samples = multiprocessing.Value("q", 0)

    def add(self, wall, cpu, samples):
        with self.wall.get_lock():
            self.wall.value += wall
            self.cpu.value += cpu
            self.samples.value += samples

    def snapshot(self):
        with self.wall.get_lock():
            return self.wall.value, self.cpu.value, self.samples.value


def _timed_map_dataset(torch_data):
    class TimedDataset(torch_data.Dataset):
        def __init__(self, inner, counters):
            self.inner, self.counters = inner, counters

        def __len__(self):
            return len(self.inner)

        def __getitem__(self, i):
            w0, c0 = time.perf_counter(), time.thread_time()
            item = self.inner[i]
            self.counters.add(time.perf_counter() - w0, time.thread_time() - c0, 1)
            return item
    return TimedDataset


def _timed_iterable_dataset(torch_data):
    class TimedIterable(torch_data.IterableDataset):
        def __init__(self, inner, counters):
            self.inner, self.counters = inner, counters

        def __iter__(self):
            it = iter(self.inner)
            while True:
                w0, c0 = time.perf_counter(), time.thread_time()
                try:
                    item = next(it)
                except StopIteration:
                    return
                self.counters.add(time.perf_counter() - w0, time.thread_time() - c0, 1)
                yield item
    return TimedIterable


class TimedCollate:
    """Adds the collate time of each batch (it runs in the worker) to the worker's busy time."""

    def __init__(self, inner, counters):
        self.inner, self.counters = inner, counters

    def __call__(self, batch):
        w0, c0 = time.perf_counter(), time.thread_time()
        out = self.inner(batch)
        self.counters.add(time.perf_counter() - w0, time.thread_time() - c0, 0)
        return out


# ---------------------------------------------------------------- datasets

def _transform(name):
    import torchvision.transforms as T
    norm = {"imagenet": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
            "cifar": ([0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616])}
    if name == "imagenet":
        return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(*norm[name])])
    if name == "cifar":
        return T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(*norm[name])])
    if name == "tensor":
        return T.ToTensor()
    raise ProbeError(f"--transform: unknown '{name}' (want imagenet, cifar or tensor)")


class FlatImageFolder:
    """Every image file directly in `root` (sorted), label 0; decoded as RGB with PIL."""

    def __init__(self, root, transform):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.lower().endswith(IMAGE_EXTENSIONS))
        self.transform = transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.files[i]) as im:
            img = im.convert("RGB")
        return self.transform(img), 0


def image_folder_dataset(root, transform_name):
    if not os.path.isdir(root):
        raise ProbeError(f"--image-folder {root}: not a directory")
    transform = _transform(transform_name)
    subdirs = [d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))]
    if subdirs:
        import torchvision.datasets as D
        try:
            return D.ImageFolder(root, transform=transform)
        except (FileNotFoundError, RuntimeError) as e:
            raise ProbeError(f"--image-folder {root}: {e}") from None
    ds = FlatImageFolder(root, transform)
    if len(ds) == 0:
        raise ProbeError(f"--image-folder {root}: no image files ({', '.join(IMAGE_EXTENSIONS)})")
    return ds


def _parse_value(v):
    try:
        return json.loads(v)
    except ValueError:
        return v


def load_object(spec, paths=()):
    """'pkg.module:Name' or 'path/file.py:Name' -> the object (paths are put on sys.path first)."""
    if ":" not in spec:
        raise ProbeError(f"'{spec}': want MODULE:NAME (e.g. mypkg.data:TrainSet or data.py:TrainSet)")
    mod_name, _, attr = spec.rpartition(":")
    for p in reversed(list(paths)):
        sys.path.insert(0, os.path.abspath(p))
    try:
        if mod_name.endswith(".py"):
            if not os.path.isfile(mod_name):
                raise ProbeError(f"'{spec}': no file {mod_name}")
            sys.path.insert(0, os.path.dirname(os.path.abspath(mod_name)))
            name = os.path.splitext(os.path.basename(mod_name))[0]
            s = importlib.util.spec_from_file_location(name, mod_name)
            module = importlib.util.module_from_spec(s)
            sys.modules[name] = module  # so that worker processes can unpickle its classes
            s.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except ProbeError:
        raise
    except Exception as e:  # the user's module failed to import: say which and why
        raise ProbeError(f"'{spec}': importing {mod_name} failed: {type(e).__name__}: {e}") from None
    if not hasattr(module, attr):
        raise ProbeError(f"'{spec}': module {mod_name} has no attribute '{attr}'")
    return getattr(module, attr)


def user_dataset(spec, args, paths):
    import torch.utils.data as torch_data
    obj = load_object(spec, paths)
    kwargs = {}
    for a in args:
        if "=" not in a:
            raise ProbeError(f"--arg {a}: want KEY=VALUE")
        k, _, v = a.partition("=")
        kwargs[k] = _parse_value(v)
    if isinstance(obj, torch_data.Dataset):
        if kwargs:
            raise ProbeError(f"'{spec}' is a Dataset object: --arg does not apply")
        return obj
    if not callable(obj):
        raise ProbeError(f"'{spec}': not a Dataset, a Dataset class or a function returning one")
    try:
        ds = obj(**kwargs)
    except Exception as e:
        raise ProbeError(f"'{spec}': constructing it failed: {type(e).__name__}: {e}") from None
    if not (isinstance(ds, torch_data.Dataset) or hasattr(ds, "__getitem__")):
        raise ProbeError(f"'{spec}': returned {type(ds).__name__}, not a Dataset")
    return ds


# Catalog workloads whose harness job (jobs.py) has a CPU DataLoader: name -> dataset factory.
def workload_dataset(model):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jobs
    makers = {
        "EfficientNet": lambda: jobs._Synthetic(50000, jobs._cifar_sample),
        "MobileNetV2": lambda: jobs._Synthetic(50000, jobs._cifar_sample),
        "VGG": lambda: jobs._Synthetic(50000, jobs._cifar_sample),
        "DCGAN": lambda: jobs._Synthetic(100000, jobs._lsun_sample),
        "PointNet": lambda: jobs._Synthetic(512, jobs._PointFiles(64, 2500)),
        "NeuMF": lambda: jobs._Synthetic(200000, jobs._neumf_sample),
    }
    if model not in makers:
        raise ProbeError(f"--workload {model}: no CPU DataLoader in its harness job (workloads with one: "
                         + ", ".join(makers) + "; BERT, LSTM and ResNet50 keep their data on the GPU or "
                         "in-process, PPO and TD3 run an environment)")
    return makers[model]()


# ---------------------------------------------------------------- the probe

def probe(dataset, workers=2, batch=32, seconds=10.0, warmup=2, collate=None, max_samples=None):
    """Iterates a DataLoader over `dataset`; returns the measurement dict (see the module doc)."""
    import torch.utils.data as torch_data
    if workers < 1:
        raise ProbeError("--workers must be >= 1 (the probe times samples inside worker processes)")
    if batch < 1 or seconds <= 0 or warmup < 0:
        raise ProbeError("--batch must be >= 1, --seconds > 0, --warmup >= 0")
    counters = Counters()
    iterable = isinstance(dataset, torch_data.IterableDataset)
    if not iterable:
        try:
            n = len(dataset)
        except TypeError:
            raise ProbeError("the dataset has neither __len__ nor __iter__") from None
        if n == 0:
            raise ProbeError("the dataset is empty")
    wrapped = (_timed_iterable_dataset if iterable else _timed_map_dataset)(torch_data)(dataset, counters)
    collate_fn = TimedCollate(collate or torch_data.default_collate, counters)
    loader = torch_data.DataLoader(wrapped, batch_size=batch, shuffle=not iterable, num_workers=workers,
                                   collate_fn=collate_fn, drop_last=False, persistent_workers=True)
    consumed, start, t0, base, deadline = 0, None, None, (0.0, 0.0, 0), None
    try:
        done = False
        while not done:
            got_any = False
            for b in loader:
                got_any = True
                consumed += 1
                if start is None and consumed > warmup:
                    # The end of the warm-up: count from here.
                    base, t0 = counters.snapshot(), time.perf_counter()
                    start, deadline = consumed, t0 + seconds
                if deadline is not None and (time.perf_counter() >= deadline or
                                             (max_samples and counters.snapshot()[2] - base[2] >= max_samples)):
                    done = True
                    break
                del b
            if not got_any:
                raise ProbeError("the dataset produced no samples")
    except ProbeError:
        raise
    except Exception as e:  # an error in the user's __getitem__ or transform, re-raised by the loader
        raise ProbeError(f"iterating the DataLoader failed: {type(e).__name__}: {e}") from None
    t1 = time.perf_counter()
    wall, cpu, samples = counters.snapshot()
    del loader
    wall, cpu, samples = wall - base[0], cpu - base[1], samples - base[2]
    if samples <= 0 or t0 is None:
        raise ProbeError(f"no samples were timed after the {warmup} warm-up batches (dataset too small?)")
    ms = 1e3 * cpu / samples
    out = {"loader_ms_per_sample": ms, "wall_ms_per_sample": 1e3 * wall / samples, "samples": samples,
           "seconds": t1 - t0, "workers": workers, "batch": batch,
           "samples_per_s": samples / (t1 - t0), "bound_samples_per_s": workers * 1e3 / ms,
           "cpu_count": os.cpu_count()}
    if not math.isfinite(ms) or ms <= 0:
        raise ProbeError(f"measured loader_ms_per_sample={ms} is not a positive number")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[3:]))
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--image-folder", metavar="DIR", help="a folder of images (flat or one sub-folder per class)")
    src.add_argument("--dataset", metavar="MODULE:NAME", help="your Dataset class / factory / object")
    src.add_argument("--workload", metavar="MODEL", help="a catalog workload's harness input pipeline")
    ap.add_argument("--transform", default="imagenet", help="for --image-folder: imagenet, cifar or tensor")
    ap.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE", help="keyword argument for --dataset")
    ap.add_argument("--path", action="append", default=[], metavar="DIR", help="prepended to sys.path")
    ap.add_argument("--collate", metavar="MODULE:NAME", help="collate_fn (default: PyTorch's default_collate)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10.0, help="timed seconds after the warm-up")
    ap.add_argument("--warmup", type=int, default=2, help="batches not counted")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    try:
        if a.image_folder:
            ds = image_folder_dataset(a.image_folder, a.transform)
            what = f"image folder {a.image_folder} ({a.transform})"
        elif a.workload:
            ds = workload_dataset(a.workload)
            what = f"workload {a.workload} (tools/measure/jobs.py)"
        else:
            ds = user_dataset(a.dataset, a.arg, a.path)
            what = a.dataset
        collate = load_object(a.collate, a.path) if a.collate else None
        r = probe(ds, workers=a.workers, batch=a.batch, seconds=a.seconds, warmup=a.warmup, collate=collate)
    except ProbeError as e:
        print(f"loader_probe: {e}", file=sys.stderr)
        return 2
    r["dataset"] = what
    if a.json:
        print(json.dumps(r, sort_keys=True))
        return 0
    print(f"loader_ms_per_sample={r['loader_ms_per_sample']:.4g}")
    print(f"  {r['samples']} samples in {r['seconds']:.1f} s with {r['workers']} worker(s), batch {r['batch']}: "
          f"{r['samples_per_s']:.1f} samples/s (bound {r['workers']} x 1000 / {r['loader_ms_per_sample']:.4g} = "
          f"{r['bound_samples_per_s']:.1f}/s); wall {r['wall_ms_per_sample']:.4g} ms per sample in the worker")
    print(f"  use: gpucast predict ... --attr loader_ms_per_sample={r['loader_ms_per_sample']:.4g} "
          f"--attr loader_workers=N")
    return 0


if __name__ == "__main__":
    sys.exit(main())
