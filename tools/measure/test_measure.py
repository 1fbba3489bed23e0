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
from contextlib import redirect_stderr, redirect_stdout

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
        self.assertEqual(M.LUCID_COLUMNS, header(os.path.join(DATA, "lucid", "single_data.csv")))
        # Lucid's columns, then the GPU: a column gpucast's CSV reader takes (src/predict/dataset.cc).
        self.assertEqual(M.SINGLE_COLUMNS, M.LUCID_COLUMNS + ["gpu"])
        with open(os.path.join(ROOT, "src", "predict", "dataset.cc")) as f:
            reader = f.read()
        self.assertIn('"gpu"', reader)
        # A step_ms column would make gpucast read the rows as DCGM-measured (MIGProfiler's export).
        self.assertIn('"step_ms"', reader)
        self.assertNotIn("step_ms", M.SINGLE_COLUMNS + M.RUN_COLUMNS)
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
                                                           {"speed": 1234.5, "gpu_util": 99.5, "gmem": 2048.0},
                                                           "NVIDIA H100 80GB HBM3")])
            with open(p) as f:
                self.assertEqual(f.read().splitlines(), [",".join(M.SINGLE_COLUMNS),
                                                         "VGG,CIFAR-10,32,1,,,,,,",
                                                         "VGG,CIFAR-10,64,0,1234.5,99.5,,2048,,NVIDIA H100 80GB HBM3"])

    def test_unknown_column_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(ValueError, r"row 0: unknown columns \['gpu_name'\]"):
                M.write_csv(os.path.join(d, "x.csv"), M.SINGLE_COLUMNS, [{"gpu_name": 1}])

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

    def test_config_and_run_order(self):
        self.assertEqual(M.parse_config("ResNet50:64:1:3"), (("ResNet50", "ImageNet", 64, 1), 3))
        self.assertEqual(M.parse_config("bert-base/amazon-review:8:0"), (("bert-base", "amazon-review", 8, 0), 1))
        for bad, why in [("ResNet50:64", "want MODEL"), ("GPT:8:0", "no catalog workload 'GPT'"),
                         ("VGG/ImageNet:8:0", "no catalog workload"), ("VGG:x:0", "are integers"),
                         ("VGG:0:0", "BATCH >= 1"), ("VGG:8:2", "AMP 0 or 1"), ("VGG:8:0:0", "REPEATS >= 1")]:
            with self.assertRaisesRegex(ValueError, why):
                M.parse_config(bad)
        # The device check's plan: every line a configuration of the catalog, none twice.
        with open(os.path.join(HERE, "device_plan.txt")) as f:
            lines = [ln.split("#")[0].strip() for ln in f]
        cfgs = [M.parse_config(ln)[0] for ln in lines if ln]
        self.assertGreaterEqual(len(cfgs), 10)
        self.assertEqual(len(cfgs), len(set(cfgs)))
        a, b = ("VGG", "CIFAR-10", 8, 0), ("LSTM", "Wikitext2", 8, 1)
        # Every configuration's first run, then the repeats: a budget cut drops repeats first.
        self.assertEqual(M.run_order({a: 3, b: 1}), [(a, 0), (b, 0), (a, 1), (a, 2)])


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


FAKE_SMI = """#!/usr/bin/python3
# nvidia-smi as the harness calls it: a name, other facts, or utilization samples alternating 90 and 100.
import os, sys
q = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--query-gpu="))
if q == "name":
    print("NVIDIA Stand-In GPU")
elif q == "compute_cap":
    print("Field compute_cap is not a valid field to query.")
    sys.exit(2)
elif q.startswith("utilization"):
    if os.environ.get("FAKE_SMI_MODE") == "mig":
        print("[N/A], 1, 512")
    else:
        n = os.path.join(os.path.dirname(os.path.abspath(__file__)), "count")
        k = int(open(n).read()) if os.path.exists(n) else 0
        open(n, "w").write(str(k + 1))
        print(f"{90 + 10 * (k % 2)}, 40, {2000 + k}")
else:
    print("N/A")
"""


class RunTest(unittest.TestCase):
    """The measuring path without a GPU: tiny jobs on the CPU, a stand-in nvidia-smi on PATH."""

    def run_main(self, d, args, mode=""):
        bin_dir = os.path.join(d, "bin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "nvidia-smi"), "w") as f:
            f.write(FAKE_SMI)
        os.chmod(os.path.join(bin_dir, "nvidia-smi"), 0o755)
        env = {"PATH": bin_dir + os.pathsep + os.environ["PATH"], "FAKE_SMI_MODE": mode,
               "GPUCAST_COMMIT": "0123abc"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        out, err = io.StringIO(), io.StringIO()
        try:
            with redirect_stdout(out), redirect_stderr(err):
                rc = M.main(["--out", os.path.join(d, "out"), "--no-onnx", "--worker-device", "cpu"] + args)
        finally:
            for k, v in saved.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        res = {"rc": rc, "out": out.getvalue(), "err": err.getvalue()}
        for name in ("single_data.csv", "runs.csv"):
            with open(os.path.join(d, "out", name), newline="") as f:
                res[name] = list(csv.DictReader(f))
        with open(os.path.join(d, "out", "environment.json")) as f:
            res["env"] = json.load(f)
        return res

    def test_runs_repeats_and_records_the_environment(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_main(d, ["--config", "NeuMF:4:0:2", "--config", "DCGAN:4:0", "--seconds", "0.6"])
            self.assertEqual(r["rc"], 0, r["out"] + r["err"])
            runs = r["runs.csv"]
            self.assertEqual([(x["model"], x["repeat"]) for x in runs], [("NeuMF", "0"), ("DCGAN", "0"), ("NeuMF", "1")])
            for x in runs:
                self.assertEqual((x["gpu"], x["error"], x["torch_peak_reserved_mib"]), ("NVIDIA Stand-In GPU", "", ""))
                self.assertGreaterEqual(int(x["smi_samples"]), 1)
                self.assertTrue(90 <= float(x["gpu_util"]) <= 100, x)
                self.assertGreaterEqual(float(x["gmem_peak"]), float(x["gmem"]))
                # Both written to 3 decimals: equal to 1e-3 relative.
                self.assertAlmostEqual(float(x["step_time_ms"]) * float(x["speed"]) / 4e3, 1, delta=1e-3)
                self.assertGreaterEqual(float(x["timed_seconds"]), 0.6)
            # Alternating 90 / 100 samples: a spread of 5 points once there are two or more.
            two = [x for x in runs if int(x["smi_samples"]) >= 2]
            self.assertTrue(all(4 <= float(x["gpu_util_sd"]) <= 5 for x in two), runs)
            single = r["single_data.csv"]
            self.assertEqual([(x["model"], x["gpu"]) for x in single],
                             [("NeuMF", "NVIDIA Stand-In GPU"), ("DCGAN", "NVIDIA Stand-In GPU")])
            self.assertEqual(single[0]["speed"], runs[0]["speed"])  # the first run's
            env = r["env"]
            self.assertEqual((env["gpu"]["name"], env["gpucast_commit"], env["skipped"]),
                             ("NVIDIA Stand-In GPU", "0123abc", []))
            self.assertTrue(env["gpu"]["compute_cap"].startswith("error: Field compute_cap"))
            self.assertEqual(set(env["harness_sha256"]), {"tools/measure/measure.py", "tools/measure/jobs.py",
                                                          "tools/workloads.py"})

    def test_a_failing_run_is_recorded_and_the_others_go_on(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_main(d, ["--config", "NeuMF:4:0", "--config", "DCGAN:4:0", "--seconds", "0.3"], mode="mig")
            self.assertEqual(r["rc"], 3)
            self.assertIn("no run succeeded", r["err"])
            self.assertEqual(len(r["runs.csv"]), 2)
            for x in r["runs.csv"]:
                self.assertIn("a GPU in MIG mode has no utilization.gpu", x["error"])
                self.assertEqual(x["gpu_util"], "")
            self.assertEqual(r["single_data.csv"], [])

    def test_the_budget_skips_what_would_end_past_it(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_main(d, ["--config", "NeuMF:4:0:3", "--seconds", "0.5", "--budget", "1"])
            self.assertEqual(r["rc"], 3)  # 0.5 s + the first run's estimate do not fit in 1 s
            self.assertEqual(r["runs.csv"], [])
            self.assertEqual([s["repeat"] for s in r["env"]["skipped"]], [0, 1, 2])
        saved = M.FIRST_RUN_ESTIMATE_S
        M.FIRST_RUN_ESTIMATE_S = 0
        try:
            with tempfile.TemporaryDirectory() as d:
                # The first run (1 s timed, plus a worker's start) fits in 1.5 s; a second would not.
                r = self.run_main(d, ["--config", "NeuMF:4:0:3", "--seconds", "1", "--budget", "1.5"])
        finally:
            M.FIRST_RUN_ESTIMATE_S = saved
        self.assertEqual(r["rc"], 0, r["out"] + r["err"])
        self.assertEqual(len(r["runs.csv"]), 1)
        self.assertEqual([s["repeat"] for s in r["env"]["skipped"]], [1, 2])
        self.assertIn("the budget skipped 2", r["out"])

    def test_a_run_past_the_budget_is_killed(self):
        saved = M.FIRST_RUN_ESTIMATE_S, M.BUDGET_GRACE_S
        M.FIRST_RUN_ESTIMATE_S, M.BUDGET_GRACE_S = 0, 0
        try:
            with tempfile.TemporaryDirectory() as d:
                # Started (1 s estimated within 1.2 s), but 1 s timed after a worker's start ends past it.
                r = self.run_main(d, ["--config", "NeuMF:4:0", "--seconds", "1", "--budget", "1.2"])
        finally:
            M.FIRST_RUN_ESTIMATE_S, M.BUDGET_GRACE_S = saved
        self.assertEqual(r["rc"], 3)
        self.assertEqual(len(r["runs.csv"]), 1)
        self.assertIn("(killed: the budget's end)", r["runs.csv"][0]["error"])


if __name__ == "__main__":
    unittest.main()
