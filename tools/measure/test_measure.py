#!/usr/bin/python3
"""Tests of the measurement harness (fast: a --dry-run of three small workloads on the CPU).

run: /usr/bin/python3 -m unittest discover -s tools/measure -p 'test_*.py'
"""
import csv
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import measure as M  # noqa: E402

DATA = os.environ.get("GPUCAST_DATA") or os.path.join(ROOT, "..", "shared", "data")


def header(path):
    with open(path, newline="") as f:
        return next(csv.reader(f))


class SchemaTest(unittest.TestCase):
    def test_columns_match_the_measured_data(self):
        self.assertEqual(M.SINGLE_COLUMNS, header(os.path.join(DATA, "lucid", "single_data.csv")))
        self.assertEqual(M.COLOCATE_COLUMNS, header(os.path.join(DATA, "lucid", "colocate_info.csv")))

    def test_catalog_covers_every_measured_workload(self):
        with open(os.path.join(ROOT, "models", "catalog.json")) as f:
            cat = json.load(f)
        self.assertEqual(cat["version"], 1)
        keys = {(w["model"], w["dataset"]) for w in cat["workloads"]}
        with open(os.path.join(DATA, "lucid", "single_data.csv"), newline="") as f:
            measured = {(r["model"], r["dataset"]) for r in csv.DictReader(f)}
        with open(os.path.join(DATA, "migprofiler-a100", "bert_train.csv"), newline="") as f:
            measured |= {(r["model"], r["dataset"]) for r in csv.DictReader(f)}
        self.assertEqual(keys, measured)
        self.assertEqual(keys, {(w["model"], w["dataset"]) for w in M.W.WORKLOADS})
        for w in cat["workloads"]:
            # The three loader/placement facts always; the optimizer (GPU memory) where stated.
            self.assertLessEqual({"loader_workers", "data_on_gpu", "rl_env"}, set(w["attrs"]), w["model"])
            self.assertLessEqual(set(w["attrs"]), {"loader_workers", "data_on_gpu", "rl_env", "optimizer"}, w["model"])
            for g in w["graphs"]:
                self.assertTrue(os.path.exists(os.path.join(ROOT, "models", g["file"])), g["file"])
                self.assertGreater(g["repeat"], 0)


class WriterTest(unittest.TestCase):
    def test_none_is_empty_and_floats_are_trimmed(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "s.csv")
            M.write_csv(p, M.SINGLE_COLUMNS, [M.single_row(("VGG", "CIFAR-10", 32, 1), None),
                                              M.single_row(("VGG", "CIFAR-10", 64, 0),
                                                           {"speed": 1234.5, "gpu_util": 99.5, "gmem": 2048.0})])
            with open(p) as f:
                self.assertEqual(f.read().splitlines(), [",".join(M.SINGLE_COLUMNS),
                                                         "VGG,CIFAR-10,32,1,,,,,",
                                                         "VGG,CIFAR-10,64,0,1234.5,99.5,,2048,"])

    def test_unknown_column_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(ValueError, r"row 0: unknown columns \['gpu'\]"):
                M.write_csv(os.path.join(d, "x.csv"), M.SINGLE_COLUMNS, [{"gpu": 1}])

    def test_pair_speeds_are_normalised_to_alone(self):
        c1, c2 = ("VGG", "CIFAR-10", 32, 0), ("LSTM", "Wikitext2", 64, 1)
        row = M.pair_row(7, c1, c2, {"speed1": 50.0, "speed2": 30.0, "gpu_util": 80.0, "gmem_util": 20.0,
                                     "gmem_peak": 4000.0}, {c1: {"speed": 100.0}, c2: {"speed": 40.0}})
        self.assertEqual((row[""], row["speed1"], row["speed2"], row["gmem"]), (7, 0.5, 0.75, 4000.0))
        self.assertEqual((row["model2"], row["batchsize2"], row["amp2"], row["gpu_num1"]), ("LSTM", 64, 1, 1))

    def test_parse_smi(self):
        self.assertEqual(M.parse_smi("97, 40, 20162\n3, 0, 512\n"), [(97.0, 40.0, 20162.0), (3.0, 0.0, 512.0)])
        with self.assertRaisesRegex(ValueError, "want 3 fields"):
            M.parse_smi("97, 40\n")
        with self.assertRaises(ValueError):
            M.parse_smi("[N/A], 1, 2\n")


class PlanTest(unittest.TestCase):
    def test_default_plan_and_pairs(self):
        cfgs = M.plan(None, [32, 64, 128], [0, 1])
        # 12 catalog workloads (Lucid's 11 + MIGProfiler's BERT) x 3 batches x AMP off/on
        self.assertEqual(len(cfgs), 12 * 3 * 2)
        self.assertEqual(cfgs[0], ("BERT", "SQuAD", 32, 0))
        pairs = M.pick_pairs(cfgs, 5)
        self.assertEqual(len(set(pairs)), 5)
        self.assertEqual(pairs, M.pick_pairs(cfgs, 5))  # seeded

    def test_unknown_workload(self):
        with self.assertRaisesRegex(SystemExit, r"unknown workload\(s\) \['GPT'\]"):
            M.plan(["GPT"], [32], [0])


class DryRunTest(unittest.TestCase):
    def test_dry_run_writes_plan_rows_without_gpu_numbers(self):
        with tempfile.TemporaryDirectory() as d:
            out = io.StringIO()
            with redirect_stdout(out):
                rc = M.main(["--out", d, "--only", "NeuMF", "PPO", "TD3", "--batches", "4,8", "--amp", "0",
                             "--pairs", "2", "--dry-run"])
            self.assertEqual(rc, 0)
            self.assertIn("GPU and speed columns left empty", out.getvalue())
            with open(os.path.join(d, "single_data.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual([(r["model"], r["batchsize"]) for r in rows],
                             [("NeuMF", "4"), ("NeuMF", "8"), ("PPO", "4"), ("PPO", "8"), ("TD3", "4"), ("TD3", "8")])
            for r in rows:
                self.assertEqual([r[c] for c in ("speed", "gpu_util", "gmem_util", "gmem", "label")], [""] * 5)
            with open(os.path.join(d, "colocate_info.csv"), newline="") as f:
                pairs = list(csv.DictReader(f))
            self.assertEqual(len(pairs), 2)
            self.assertEqual(pairs[1]["gpu_util"], "")
            import onnx
            for name in ("neumf.onnx", "ppo.onnx", "td3_actor.onnx", "td3_critic.onnx"):
                onnx.checker.check_model(onnx.load(os.path.join(d, "onnx", name)))


if __name__ == "__main__":
    unittest.main()
