#!/usr/bin/python3
"""Tests of the CPU-only input-pipeline probe (loader_probe.py) on data sets the test writes itself.

run: /usr/bin/python3 -m unittest discover -s tools/measure -p 'test_*.py'
Needs python3-torch, python3-torchvision and PIL (Debian packages of `make deps`); without them the
tests fail (they are not skipped): the probe cannot run without them either.
"""
import io
import json
import math
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import loader_probe as P  # noqa: E402


def write_jpegs(folder, n, size, seed):
    import numpy as np
    from PIL import Image
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(
            os.path.join(folder, f"{i:03d}.jpg"), quality=90)


class LoaderProbeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpucast-loader-probe-")
        # 24 small and 24 large JPEGs (random pixels: JPEG cannot compress them away).
        write_jpegs(os.path.join(cls.tmp, "small"), 24, 32, seed=1)
        write_jpegs(os.path.join(cls.tmp, "large", "class_a"), 12, 384, seed=2)
        write_jpegs(os.path.join(cls.tmp, "large", "class_b"), 12, 384, seed=3)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    _cache = {}

    def probe_folder(self, sub, transform):
        key = (sub, transform)
        if key not in self._cache:
            ds = P.image_folder_dataset(os.path.join(self.tmp, sub), transform)
            self._cache[key] = P.probe(ds, workers=1, batch=4, seconds=0.6, warmup=1)
        return self._cache[key]

    def test_positive_finite_and_larger_images_cost_more(self):
        small = self.probe_folder("small", "tensor")
        large = self.probe_folder("large", "tensor")  # class sub-folders: torchvision ImageFolder
        for r in (small, large):
            self.assertTrue(math.isfinite(r["loader_ms_per_sample"]) and r["loader_ms_per_sample"] > 0, r)
            self.assertGreater(r["samples"], 0)
            self.assertGreater(r["wall_ms_per_sample"], 0)
            self.assertAlmostEqual(r["bound_samples_per_s"], 1000 / r["loader_ms_per_sample"])
        # 144x the pixels to decode and convert: far more CPU per sample.
        self.assertGreater(large["loader_ms_per_sample"], 3 * small["loader_ms_per_sample"], (small, large))

    def test_heavier_transform_costs_more(self):
        # Same 32x32 images: ToTensor alone vs RandomResizedCrop to 224x224 + flip + normalise (49x the
        # output pixels).
        light = self.probe_folder("small", "tensor")
        heavy = self.probe_folder("small", "imagenet")
        self.assertGreater(heavy["loader_ms_per_sample"], 1.5 * light["loader_ms_per_sample"], (light, heavy))

    def test_user_dataset_by_file_and_name_with_args(self):
        mod = os.path.join(self.tmp, "userdata.py")
        with open(mod, "w") as f:
            f.write(textwrap.dedent("""\
                import torch
                from torch.utils.data import Dataset

                class Squares(Dataset):
                    def __init__(self, n, work=1):
                        self.n, self.work = n, work

                    def __len__(self):
                        return self.n

                    def __getitem__(self, i):
                        x = torch.full((16,), float(i))
                        for _ in range(self.work):
                            x = (x * x).sqrt()
                        return x, i
                """))
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = P.main(["--dataset", f"{mod}:Squares", "--arg", "n=64", "--arg", "work=3", "--workers", "1",
                         "--batch", "8", "--seconds", "0.5", "--warmup", "1", "--json"])
        self.assertEqual(rc, 0, err.getvalue())
        r = json.loads(out.getvalue())
        self.assertGreater(r["loader_ms_per_sample"], 0)
        self.assertTrue(math.isfinite(r["loader_ms_per_sample"]))
        self.assertEqual(r["dataset"], f"{mod}:Squares")
        self.assertEqual(r["workers"], 1)

    def test_bad_inputs_are_clear_errors(self):
        cases = [
            (["--image-folder", os.path.join(self.tmp, "nope")], "--image-folder " + os.path.join(self.tmp, "nope") + ": not a directory"),
            (["--dataset", "nodots"], "'nodots': want MODULE:NAME"),
            (["--dataset", "no_such_module_xyz:Thing"], "'no_such_module_xyz:Thing': importing no_such_module_xyz failed: ModuleNotFoundError"),
            (["--dataset", "json:NoSuchName"], "'json:NoSuchName': module json has no attribute 'NoSuchName'"),
            (["--image-folder", os.path.join(self.tmp, "small"), "--transform", "sepia"], "--transform: unknown 'sepia'"),
            (["--image-folder", os.path.join(self.tmp, "small"), "--workers", "0"], "--workers must be >= 1"),
        ]
        for argv, want in cases:
            err = io.StringIO()
            with redirect_stdout(io.StringIO()), redirect_stderr(err):
                rc = P.main(argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn("loader_probe: " + want, err.getvalue(), argv)

    def test_catalog_workload_pipeline(self):
        # The harness's NeuMF loader (Python-side negative sampling): cheap, but measurable.
        r = P.probe(P.workload_dataset("NeuMF"), workers=1, batch=32, seconds=0.4, warmup=1)
        self.assertTrue(math.isfinite(r["loader_ms_per_sample"]) and r["loader_ms_per_sample"] > 0, r)
        with self.assertRaises(P.ProbeError) as cm:
            P.workload_dataset("ResNet50")
        self.assertIn("--workload ResNet50: no CPU DataLoader in its harness job", str(cm.exception))

    def test_empty_folder_is_an_error(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty, exist_ok=True)
        with self.assertRaises(P.ProbeError) as cm:
            P.image_folder_dataset(empty, "tensor")
        self.assertIn("no image files", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
