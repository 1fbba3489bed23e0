"""The Python client and the Grafana dashboard against a real `gpucast serve` on loopback.

Run: GPUCAST_BIN=build/gpucast python3 -m unittest discover -s clients/python -p 'test_*.py'
(make test does). Without GPUCAST_BIN the tests fail: they cannot run without the binary.
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from gpucast_client import Client, GpucastError, models_field  # noqa: E402
from gpucast_client.__main__ import main as cli_main, show_prediction  # noqa: E402

DASHBOARD = os.path.join(ROOT, "integrations", "grafana", "gpucast-dashboard.json")
SERVER = {}


def setUpModule():
    binary = os.environ.get("GPUCAST_BIN")
    if not binary or not os.access(binary, os.X_OK):
        raise RuntimeError("set GPUCAST_BIN to the gpucast binary (these tests need a running gpucast serve)")
    tmp = tempfile.TemporaryDirectory(prefix="gpucast-client-test.")
    predictor = os.path.join(tmp.name, "p.json")
    if os.environ.get("GPUCAST_TEST_PREDICTOR"):  # make test's one predictor for every suite
        shutil.copyfile(os.environ["GPUCAST_TEST_PREDICTOR"], predictor)
    else:
        subprocess.run([binary, "train", "--out", predictor, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    out = open(os.path.join(tmp.name, "out"), "w+")
    err = open(os.path.join(tmp.name, "err"), "w+")
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp.name, "jobs.db"),
                             "--predictor", predictor, "--cluster", "2x RTX3090",
                             "--model-root", os.path.join(ROOT, "models")], stdout=out, stderr=err)
    url = None
    for _ in range(200):
        out.seek(0)
        m = re.search(r"^listening on (\S+)$", out.read(), re.M)
        if m:
            url = "http://" + m.group(1)
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if not url:
        proc.kill()
        err.seek(0)
        raise RuntimeError("gpucast serve did not start: " + err.read())
    SERVER.update(binary=binary, tmp=tmp, predictor=predictor, proc=proc, url=url, files=(out, err))


def tearDownModule():
    if "proc" in SERVER:
        SERVER["proc"].terminate()
        SERVER["proc"].wait(timeout=10)
        for f in SERVER["files"]:
            f.close()
        SERVER["tmp"].cleanup()


def cli_predict(*args):
    """gpucast predict --json, the command-line front end's answer."""
    cmd = [SERVER["binary"], "predict", "--predictor", SERVER["predictor"], "--json", "--quiet", *args]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def cli_text(*args):
    """gpucast predict's text output."""
    cmd = [SERVER["binary"], "predict", "--predictor", SERVER["predictor"], "--quiet", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


# Jobs with every flag gpucast predict takes; paths relative to models/.
FLAG_CASES = [
    ["--model", "resnet50.onnx", "--batch", "32"],
    ["--model", "bert.onnx", "--batch", "8", "--dim", "seq=384", "--gpu", "A100-80GB", "--gpus", "2"],
    ["--model", "vgg.onnx", "--batch", "64", "--attr", "loader_workers=2", "--attr", "optimizer=sgd", "--amp",
     "--gpus", "4", "--nodes", "2", "--interconnect", "pcie4x16,ib200", "--level", "0.9", "--gpu", "V100-32GB"],
    ["--model", "pointnet.onnx", "--batch", "32", "--gpu", "A100-80GB", "--mig", "3g.40gb"],
    ["--model", "dcgan_generator.onnx", "--model", "dcgan_discriminator.onnx", "--model",
     "dcgan_discriminator.onnx", "--batch", "128"],
]


def with_paths(args):
    out = list(args)
    for i, a in enumerate(out):
        if i > 0 and out[i - 1] == "--model":
            out[i] = os.path.join(ROOT, "models", a)
    return out


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = cli_main(["--url", SERVER["url"], *argv])
        except SystemExit as e:  # argparse
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class ModelsFieldTest(unittest.TestCase):
    def test_repeats_become_passes(self):
        self.assertEqual(models_field(["a.onnx"]), {"model": "a.onnx"})
        self.assertEqual(models_field(["g.onnx", "d.onnx", "d.onnx", "d.onnx"]),
                         {"models": [{"path": "g.onnx", "repeat": 1}, {"path": "d.onnx", "repeat": 3}]})
        self.assertEqual(models_field(["a.onnx", "a.onnx"]), {"models": [{"path": "a.onnx", "repeat": 2}]})
        with self.assertRaises(ValueError):
            models_field([])


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.c = Client(SERVER["url"])

    def test_predict_gives_the_command_line_answer(self):
        models = os.path.join(ROOT, "models")
        cases = [
            (["resnet50.onnx"], 32, {}, {}),
            (["bert.onnx"], 8, {"seq": 384}, {}),
            (["vgg.onnx"], 128, {}, {"loader_workers": 2}),
            (["dcgan_generator.onnx"] + ["dcgan_discriminator.onnx"] * 3, 128, {}, {}),
        ]
        for files, batch, dims, attrs in cases:
            with self.subTest(files=files):
                r = self.c.predict(files, batch, dims=dims, attrs=attrs)
                args = [a for f in files for a in ("--model", os.path.join(models, f))] + ["--batch", str(batch)]
                args += [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
                args += [a for k, v in attrs.items() for a in ("--attr", f"{k}={v}")]
                want = cli_predict(*args)
                self.assertAlmostEqual(r["predicted_util"], want["gpu_util"], delta=0.006)
                self.assertAlmostEqual(r["predicted_util_interval"][0], want["interval"]["low"], delta=0.006)
                self.assertAlmostEqual(r["predicted_util_interval"][1], want["interval"]["high"], delta=0.006)

    def test_upload_gives_the_same_answer_as_a_path(self):
        with open(os.path.join(ROOT, "models", "pointnet.onnx"), "rb") as f:
            up = self.c.predict_upload(f.read(), batch=32, **{"attr.loader_workers": 2})
        by_path = self.c.predict(["pointnet.onnx"], 32, attrs={"loader_workers": 2})
        self.assertEqual(up["predicted_util"], by_path["predicted_util"])

    def test_a_stored_model_is_named_by_its_digest(self):
        path = os.path.join(ROOT, "models", "pointnet.onnx")
        rc, out, err = run_cli("store-model", path)
        self.assertEqual(rc, 0, err)
        with open(path, "rb") as f:
            digest = "sha256:" + __import__("hashlib").sha256(f.read()).hexdigest()
        self.assertEqual(out.strip(), digest)
        self.assertEqual(self.c.predict([digest], 32)["predicted_util"], self.c.predict(["pointnet.onnx"], 32)["predicted_util"])

    def test_job_lifecycle_and_errors(self):
        job = self.c.submit(["resnet50.onnx"], batch=32, name="client-test", duration_s=3600)
        self.assertIn(job["state"], ("queued", "running"))
        self.assertEqual(self.c.job(job["id"])["name"], "client-test")
        self.assertIn(job["id"], [j["id"] for j in self.c.jobs()])
        obs = self.c.observe(job["id"], 41.5, "nvidia-smi", samples=60)
        self.assertEqual(obs["observed_samples"], 60)
        self.assertEqual(self.c.cancel(job["id"])["state"], "cancelled")
        with self.assertRaises(GpucastError) as e:
            self.c.cancel(job["id"])
        self.assertEqual(e.exception.status, 409)
        self.assertIn(f"job {job['id']} is already cancelled", e.exception.message)
        with self.assertRaises(GpucastError) as e:
            self.c.predict(["/etc/shadow"], 1)
        self.assertEqual(e.exception.status, 422)
        self.assertIn("no such model file under the service's model roots", e.exception.message)
        with self.assertRaises(GpucastError) as e:
            self.c.job(999999)
        self.assertEqual((e.exception.status, e.exception.message), (404, "no job 999999"))

    def test_submit_takes_the_level_as_predict_does(self):
        # The job's intervals are /v1/predict's at that level, and say it; the level is stored with the job.
        rc, out, err = run_cli("--json", "predict", "--model", "pointnet.onnx", "--batch", "8", "--level", "0.5")
        self.assertEqual(rc, 0, err)
        want = json.loads(out)
        rc, out, err = run_cli("--json", "submit", "--model", "pointnet.onnx", "--batch", "8", "--level", "0.5",
                               "--duration-s", "1")
        self.assertEqual(rc, 0, err)
        job = json.loads(out)
        self.assertEqual(job["level"], 0.5)
        self.assertEqual(job["interval"], want["interval"])
        self.assertEqual(job["predicted_util_interval"], want["predicted_util_interval"])
        self.assertEqual(self.c.job(job["id"])["gpu_mem_interval"]["level"], 0.5)

    def test_paging_reads_every_job(self):
        ids = [self.c.submit(["pointnet.onnx"], batch=8, duration_s=1)["id"] for _ in range(5)]
        seen = [j["id"] for j in self.c.jobs(limit=2)]
        self.assertEqual(len(seen), len(set(seen)))
        self.assertTrue(set(ids) <= set(seen))

    def test_unreachable_service(self):
        with self.assertRaises(GpucastError) as e:
            Client("http://127.0.0.1:9", timeout=2).health()
        self.assertEqual(e.exception.status, 0)
        self.assertIn("cannot reach the gpucast service", e.exception.message)


class CommandLineTest(unittest.TestCase):
    def test_predict(self):
        rc, out, err = run_cli("predict", "--model", "resnet50.onnx", "--batch", "32")
        self.assertEqual(rc, 0, err)
        want = cli_predict("--model", os.path.join(ROOT, "models", "resnet50.onnx"), "--batch", "32")
        self.assertRegex(out, r"^predicted GPU utilization on RTX3090: \d+\.\d% +\(\d+% interval \d+\.\d-\d+\.\d%")
        self.assertIn(f"{want['gpu_util']:.1f}%", out)

    def test_the_python_client_equals_the_cli(self):
        """Issue 31: the same flags, the same answer: every field of `gpucast predict --json` (but the
        models' paths, the warnings and the schema) is in the service's reply with the same value, and
        the client prints the lines gpucast predict prints (utilization, step time, an unmeasured GPU,
        unsure, workload, expected error, the data-parallel rank, memory), each as printed."""
        for args in FLAG_CASES:
            with self.subTest(args=args):
                rc, out, err = run_cli("--json", "predict", *args)
                self.assertEqual(rc, 0, err)
                got = json.loads(out)
                want = cli_predict(*with_paths(args))
                for k, v in want.items():
                    if k in ("models", "warnings", "schema"):
                        continue
                    self.assertIn(k, got)
                    self.assertEqual(got[k], v, k)
                rc, out, err = run_cli("predict", *args)
                self.assertEqual(rc, 0, err)
                text = cli_text(*with_paths(args)).splitlines()
                shown = out.splitlines()
                self.assertEqual(shown, text)  # every line gpucast predict prints, in its order
                if "data_parallel" in want:
                    self.assertIn(f"{want['data_parallel']['step_ms']:.1f} ms", out)

    def test_json_and_errors(self):
        rc, out, _ = run_cli("--json", "health")
        self.assertEqual(rc, 0)
        self.assertEqual(json.loads(out)["status"], "ok")
        rc, out, err = run_cli("predict", "--model", "nosuch.onnx", "--batch", "1")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("gpucast_client: HTTP 422: model 'nosuch.onnx': no such model file", err)
        rc, _, err = run_cli("predict", "--batch", "1")
        self.assertEqual(rc, 2)
        self.assertIn("give --model (repeatable) or --upload FILE", err)

    def test_attrs_and_dims_as_gpucast_predict_takes_them(self):
        """--attr went cast to a number (loader_workers=1e3 as 1000.0, taken; gpucast predict refuses
        it) and a key given twice was the last one's; now the service parses the text as the CLI
        does, and a repeat is an error as it is in gpucast predict."""
        rc, out, err = run_cli("predict", "--model", "resnet50.onnx", "--batch", "8", "--attr", "loader_workers=1e3")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("job attribute 'loader_workers': value '1e3' is not a non-negative integer", err)
        for flag, a, b in (("--attr", "loader_workers=1", "loader_workers=8"), ("--dim", "seq=64", "seq=128")):
            with self.subTest(flag=flag):
                rc, out, err = run_cli("predict", "--model", "bert.onnx", "--batch", "8", flag, a, flag, b)
                self.assertEqual((rc, out), (2, ""))
                self.assertIn(f"{flag} '{b}': key given twice", err)
        rc, out, err = run_cli("--json", "predict", "--model", "pointnet.onnx", "--batch", "8", "--attr",
                               "loader_ms_per_sample=2.5", "--attr", "optimizer=adamw", "--attr", "loader_workers=2")
        self.assertEqual(rc, 0, err)
        want = cli_predict("--model", os.path.join(ROOT, "models", "pointnet.onnx"), "--batch", "8", "--attr",
                           "loader_ms_per_sample=2.5", "--attr", "optimizer=adamw", "--attr", "loader_workers=2")
        got = json.loads(out)
        for k in ("gpu_util", "interval", "gpu_mem_mib", "gpu_mem_interval", "step_ms", "optimizer"):
            self.assertEqual(got[k], want[k], k)

    def test_as_a_process(self):
        env = dict(os.environ, PYTHONPATH=HERE, GPUCAST_URL=SERVER["url"])
        r = subprocess.run([sys.executable, "-m", "gpucast_client", "predict", "-m", "dcgan_generator.onnx",
                            "-m", "dcgan_discriminator.onnx", "-m", "dcgan_discriminator.onnx", "-b", "64"],
                           capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("predicted GPU utilization "), r.stdout)


class BoostClockModelTest(unittest.TestCase):
    def test_the_client_prints_the_clis_boost_clock_line(self):
        """A model trained with --no-power-limited-clock: `gpucast predict --json` says
        power_limited_clock false, and the client prints, from those fields, the lines gpucast predict
        prints, its boost-clock line among them."""
        binary = SERVER["binary"]
        boost = os.path.join(SERVER["tmp"].name, "boost.json")
        subprocess.run([binary, "train", "--algo", "physics", "--no-power-limited-clock", "--out", boost, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        args = ["predict", "--predictor", boost, "--model", os.path.join(ROOT, "models", "vgg.onnx"), "--batch", "8",
                "--quiet"]
        got = json.loads(subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True).stdout)
        self.assertIs(got["power_limited_clock"], False)
        text = subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout.splitlines()
        self.assertIn("  boost clock: the model counts every GPU's compute peaks at its boost clock, not the "
                      "power-limited clock (docs/predictor.md)", text)
        self.assertEqual(show_prediction(got).splitlines(), text)
        # The server's model (trained with the default, the power-limited clock): true.
        self.assertIs(cli_predict("--model", os.path.join(ROOT, "models", "vgg.onnx"), "--batch", "8")
                      ["power_limited_clock"], True)


class GrafanaDashboardTest(unittest.TestCase):
    """Every metric a panel queries exists in a live /metrics scrape."""

    def test_every_panel_metric_is_served(self):
        c = Client(SERVER["url"])
        c.predict(["resnet50.onnx"], 32)  # so that the labelled series have samples
        served = set(re.findall(r"^# TYPE (\w+) (\w+)$", c.metrics(), re.M))
        names = {n for n, _ in served}
        histograms = {n for n, t in served if t == "histogram"}
        with open(DASHBOARD) as f:
            dash = json.load(f)
        self.assertTrue(dash["panels"])
        used = set()
        for p in dash["panels"]:
            self.assertTrue(p["targets"], p["title"])
            for t in p["targets"]:
                for m in re.findall(r"\bgpucast_\w+", t["expr"]):
                    base = re.sub(r"_(bucket|sum|count)$", "", m)
                    if base != m:
                        self.assertIn(base, histograms, f"panel '{p['title']}': {m}: no histogram {base} served")
                    else:
                        self.assertIn(m, names, f"panel '{p['title']}': {m} is not in /metrics")
                    used.add(base)
        # And the dashboard shows every series the service exports.
        self.assertEqual(names - used, set(), "series served but on no panel")


if __name__ == "__main__":
    unittest.main()
