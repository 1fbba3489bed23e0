#!/usr/bin/python3
"""Tests of measured_check.py: its figures on hand-computed numbers, and the whole check on a folder in
measure.py's layout made from MIGProfiler's whole-A100 rows (their own step_ms is the reference for the
step the check derives from speed), predicted through the gpucast binary.

run: /usr/bin/python3 -m unittest discover -s tools/measure -p 'test_*.py'
needs: the gpucast binary (GPUCAST_BIN, default build/gpucast) and ../shared/data (GPUCAST_DATA);
GPUCAST_TEST_PREDICTOR (make test's fixture) saves a `gpucast train`.
"""
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import measure as M  # noqa: E402
import measured_check as C  # noqa: E402

DATA = os.environ.get("GPUCAST_DATA") or os.path.join(ROOT, "..", "shared", "data")
BIN = os.environ.get("GPUCAST_BIN") or os.path.join(ROOT, "build", "gpucast")


class FiguresTest(unittest.TestCase):
    def test_util(self):
        rows = [{"measured": 50.0, "predicted": 60.0, "low": 40.0, "high": 70.0},
                {"measured": 90.0, "predicted": 80.0, "low": 91.0, "high": 95.0}]
        f = C.util_figures(rows)
        r = math.sqrt(((math.log(61 / 51)) ** 2 + (math.log(81 / 91)) ** 2) / 2)
        c = math.sqrt(((math.log(71 / 51)) ** 2 + (math.log(71 / 91)) ** 2) / 2)  # the constant: the mean, 70
        self.assertAlmostEqual(f["rmsle"], r, places=12)
        self.assertAlmostEqual(f["constant_rmsle"], c, places=12)
        self.assertAlmostEqual(f["rmsle_over_constant"], r / c, places=12)
        self.assertEqual((f["coverage"], f["median_width"], f["constant"]), (0.5, 17.0, 70.0))

    def test_step_and_ratio(self):
        rows = [{"step_ms": 10.0, "step_low_ms": 8.0, "step_high_ms": 11.0, "step_measured_ms": 12.0,
                 "ref_step_ms": 20.0, "ref_step_measured_ms": 20.0},
                {"step_ms": 30.0, "step_low_ms": 20.0, "step_high_ms": 40.0, "step_measured_ms": 25.0},
                {"step_ms": None, "step_measured_ms": 5.0}]
        f = C.step_figures(rows)
        self.assertEqual(f["rows"], 2)
        self.assertAlmostEqual(f["median_ape"], (2 / 12 + 5 / 25) / 2, places=12)
        self.assertEqual(f["coverage"], 0.5)
        # predicted ratio 10 / 20 against the measured 12 / 20
        self.assertEqual(f["ratio_rows"], 1)
        self.assertAlmostEqual(f["ratio_median_error"], abs(0.5 / 0.6 - 1), places=12)
        self.assertIsNone(C.step_figures([{"step_ms": None}]))

    def test_memory(self):
        rows = [{"mem_mib": 1000.0, "mem_low_mib": 900.0, "mem_high_mib": 1300.0, "mem_measured_mib": 1100.0,
                 "mem_peak_mib": 1250.0},
                {"mem_mib": 2000.0, "mem_low_mib": 1800.0, "mem_high_mib": 2400.0, "mem_measured_mib": 2000.0,
                 "mem_peak_mib": 2500.0},
                {"mem_mib": 4000.0, "mem_low_mib": 3000.0, "mem_high_mib": 5000.0, "mem_measured_mib": 4000.0}]
        f = C.memory_figures(rows)
        self.assertAlmostEqual(f["mape_mean"], (100 / 1100) / 3, places=12)
        self.assertAlmostEqual(f["mape_peak"], (250 / 1250 + 500 / 2500) / 2, places=12)
        self.assertEqual((f["peak_rows"], f["high_holds_peak"]), (2, 0.5))
        self.assertAlmostEqual(f["median_width_over_point"], 0.4, places=12)  # 0.4, 0.3, 0.5

    def test_repeats(self):
        runs = [{"model": "A", "dataset": "d", "batchsize": "8", "amp": "0", "gpu_util": "96", "step_time_ms": "10",
                 "gmem_peak": "100", "error": ""},
                {"model": "A", "dataset": "d", "batchsize": "8", "amp": "0", "gpu_util": "97.5", "step_time_ms": "11",
                 "gmem_peak": "140", "error": ""},
                {"model": "A", "dataset": "d", "batchsize": "8", "amp": "0", "error": "worker failed"},
                {"model": "B", "dataset": "d", "batchsize": "8", "amp": "0", "gpu_util": "50", "step_time_ms": "3",
                 "gmem_peak": "10", "error": ""}]
        self.assertEqual(C.repeat_figures(runs), [{"config": ["A", "d", 8, 0], "runs": 2, "util_min": 96.0,
                                                   "util_max": 97.5, "step_spread": 0.10000000000000009,
                                                   "peak_mib_min": 100.0, "peak_mib_max": 140.0}])


def write_folder(d, rows, gpu="NVIDIA A100-SXM4-80GB", runs=None):
    with open(os.path.join(d, "single_data.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(M.SINGLE_COLUMNS)
        for r in rows:
            w.writerow([r.get(c, "") for c in M.LUCID_COLUMNS] + [gpu])
    if runs is not None:
        M.write_csv(os.path.join(d, "runs.csv"), M.RUN_COLUMNS, runs)


class CheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(BIN):
            raise AssertionError(f"{BIN}: no gpucast binary (make build, or GPUCAST_BIN)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.predictor = os.environ.get("GPUCAST_TEST_PREDICTOR")
        if not cls.predictor:
            cls.predictor = os.path.join(cls.tmp.name, "p.json")
            subprocess.run([BIN, "train", "--out", cls.predictor, "--quiet"], check=True, capture_output=True,
                           env={**os.environ, "GPUCAST_DATA": DATA})
        with open(os.path.join(DATA, "migprofiler-a100", "bert_train.csv"), newline="") as f:
            cls.mig = [r for r in csv.DictReader(f) if r["mig_profile"] == "7g.80gb" and r["seq_length"] == "64"]
        # MIGProfiler's rows in measure.py's layout: speed from their step, memory their mean used.
        cls.rows = [{"model": r["model"], "dataset": r["dataset"], "batchsize": r["batchsize"], "amp": r["amp"],
                     "speed": 1e3 * int(r["batchsize"]) / float(r["step_ms"]), "gpu_util": r["gpu_util"],
                     "gmem": r["gmem_mib"]} for r in cls.mig]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_check(self, d, *extra):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = C.main([d, "--gpucast", BIN, "--predictor", self.predictor, "--data", DATA] + list(extra))
        return rc, out.getvalue(), err.getvalue()

    def test_mig_rows_as_a_measured_folder(self):
        self.assertEqual(len(self.rows), 6)
        runs = [M.run_row(("bert-base", "amazon-review", int(r["batchsize"]), 0), 0,
                          {"gpu_util": float(r["gpu_util"]), "gmem_peak": float(r["gmem"]) + 200}) for r in self.rows]
        runs.append(M.run_row(("bert-base", "amazon-review", 32, 0), 1, {"gpu_util": 99.0, "gmem_peak": 1.0}))
        with tempfile.TemporaryDirectory() as d:
            write_folder(d, self.rows, runs=runs)
            rc, out, err = self.run_check(d, "--json")
            self.assertEqual(rc, 0, err)
            res = json.loads(out)
            md = self.run_check(d)[1]
        self.assertEqual((res["resolved_gpu"], res["held_out"]), ("A100-80GB", False))  # the default's rows
        self.assertIn("A100-80GB is among them: NOT held out", md)
        self.assertEqual(len(res["rows"]), 6)
        for row, mig in zip(res["rows"], self.mig):
            # The step derived from speed is MIGProfiler's own step_ms.
            self.assertAlmostEqual(row["step_measured_ms"], float(mig["step_ms"]), places=9)
            self.assertEqual(row["mem_peak_mib"], float(mig["gmem_mib"]) + 200)  # the first run's, not the repeat's
        # Each row predicted as a user would: the catalog's graph, dims and job facts, written out here.
        b8 = res["rows"][0]
        p = subprocess.run([BIN, "predict", "-p", self.predictor, "-m", os.path.join(ROOT, "models", "bert-base.onnx"),
                            "--batch", "8", "--dim", "seq=64", "--attr", "loader_workers=6", "--attr", "data_on_gpu=0",
                            "--attr", "rl_env=0", "--attr", "optimizer=adamw", "--gpu", "NVIDIA A100-SXM4-80GB",
                            "--json", "--quiet"], capture_output=True, text=True, check=True)
        d = json.loads(p.stdout)
        self.assertEqual((b8["predicted"], b8["step_ms"], b8["mem_high_mib"]),
                         (d["gpu_util"], d["step_ms"], d["gpu_mem_interval"]["high"]))
        holds = sum(r["mem_high_mib"] >= float(m["gmem_mib"]) + 200 for r, m in zip(res["rows"], self.mig)) / 6
        self.assertEqual(res["memory"]["high_holds_peak"], holds)
        self.assertEqual(res["step"].get("ratio_rows"), None)  # Lucid has no bert-base rows
        self.assertEqual(res["repeats"], [{"config": ["bert-base", "amazon-review", 32, 0], "runs": 2,
                                           "util_min": float(self.rows[2]["gpu_util"]), "util_max": 99.0,
                                           "step_spread": None, "peak_mib_min": 1.0,
                                           "peak_mib_max": float(self.rows[2]["gmem"]) + 200}])

    def test_a_lucid_configuration_gets_a_step_ratio(self):
        # Lucid's VGG row at batch 128 given as if measured on an A100: its ratio to itself on the
        # RTX 3090 is 1 measured; the predicted ratio is gpucast's A100 / RTX 3090 step.
        with open(os.path.join(DATA, "lucid", "single_data.csv"), newline="") as f:
            vgg = next(r for r in csv.DictReader(f) if (r["model"], r["batchsize"], r["amp"]) == ("VGG", "128", "0"))
        with tempfile.TemporaryDirectory() as d:
            write_folder(d, [vgg])
            rc, out, err = self.run_check(d, "--json")
        self.assertEqual(rc, 0, err)
        row = json.loads(out)["rows"][0]
        self.assertEqual(row["ref_gpu"], "RTX3090")
        self.assertAlmostEqual(row["ref_step_measured_ms"], row["step_measured_ms"], places=9)
        step = json.loads(out)["step"]
        self.assertAlmostEqual(step["ratio_median_error"], abs(row["step_ms"] / row["ref_step_ms"] - 1), places=12)

    def test_the_context_probe_beside_the_smallest_job(self):
        with tempfile.TemporaryDirectory() as d:
            write_folder(d, self.rows[:2])
            with open(os.path.join(d, "context.json"), "w") as f:
                json.dump({"stages": [{"stage": "init", "above_before_mib": 500.0},
                                      {"stage": "cublas", "above_before_mib": 541.0}], "cuda_module_loading": "LAZY"}, f)
            rc, out, err = self.run_check(d, "--json")
            self.assertEqual(rc, 0, err)
            c = json.loads(out)["context"]
            self.assertEqual(c["measured_above_idle_mib"], {"init": 500.0, "cublas": 541.0})
            self.assertEqual(c["predicted_for"], "bert-base batch 8")
            p = subprocess.run([BIN, "predict", "-p", self.predictor, "-m", os.path.join(ROOT, "models", "bert-base.onnx"),
                                "--batch", "8", "--dim", "seq=64", "--attr", "loader_workers=6", "--attr",
                                "data_on_gpu=0", "--attr", "rl_env=0", "--attr", "optimizer=adamw", "--gpu",
                                "NVIDIA A100-SXM4-80GB", "--json", "--quiet"], capture_output=True, text=True, check=True)
            comp = json.loads(p.stdout)["gpu_mem_components_mib"]
            self.assertAlmostEqual(c["predicted_fixed_mib"], comp["context"] + comp["cublas_workspace"] + comp["cudnn"],
                                   places=6)
            self.assertIn("Fixed part (context_probe): nvidia-smi MiB above the idle GPU after init 500, cublas 541",
                          self.run_check(d)[1])
            with open(os.path.join(d, "context.json"), "w") as f:
                f.write("{not json")
            rc, _, err = self.run_check(d)
            self.assertEqual(rc, 2)
            self.assertIn("context.json: not context_probe's output", err)

    def test_bad_folders(self):
        with tempfile.TemporaryDirectory() as d:
            rc, _, err = self.run_check(d)
            self.assertEqual(rc, 2)
            self.assertIn(os.path.join(d, "single_data.csv") + ": No such file or directory", err)
            write_folder(d, self.rows[:1], gpu="")
            rc, _, err = self.run_check(d)
            self.assertEqual(rc, 2)
            self.assertIn("want one GPU name in every row's 'gpu' column, got ['']", err)
            write_folder(d, self.rows[:1] + [dict(self.rows[0], model="GPT")])
            rc, out, err = self.run_check(d)
            self.assertEqual(rc, 1, err)
            self.assertIn("single_data.csv:3: GPT/amazon-review is not a catalog workload", out)
            write_folder(d, [dict(self.rows[0], speed="nan")])
            rc, _, err = self.run_check(d)
            self.assertEqual(rc, 2)
            self.assertIn("single_data.csv:2: column 'speed': 'nan' is not finite", err)
            write_folder(d, self.rows[:1], gpu="NVIDIA Imaginary 9000")
            rc, out, err = self.run_check(d)
            self.assertEqual(rc, 2)
            self.assertIn("no row could be predicted", err)
            self.assertIn("NVIDIA Imaginary 9000", err)


if __name__ == "__main__":
    unittest.main()
