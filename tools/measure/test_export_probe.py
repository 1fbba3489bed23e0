#!/usr/bin/python3
"""Tests of export_probe.py: the plain-torch GPT exported on this machine's torch and read back through
the gpucast binary, and archives that are not the probe's.

run: /usr/bin/python3 -m unittest discover -s tools/measure -p 'test_*.py'
needs: the gpucast binary (GPUCAST_BIN, default build/gpucast).
"""
import io
import json
import os
import sys
import tarfile
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import export_probe as E  # noqa: E402

BIN = os.environ.get("GPUCAST_BIN") or os.path.join(ROOT, "build", "gpucast")


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = E.main(argv)
    return rc, out.getvalue(), err.getvalue()


class ExportProbeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(BIN):
            raise AssertionError(f"{BIN}: no gpucast binary (make build, or GPUCAST_BIN)")
        import torch
        cls.torch = torch.__version__
        cls.tmp = tempfile.TemporaryDirectory()
        cls.archive = os.path.join(cls.tmp.name, "ep.tar.gz")
        rc, cls.log, _ = run(["export", "--out", cls.archive, "--only", "gpt_small"])
        assert rc == 0, cls.log
        rc, out, err = run(["check", cls.archive, "--gpucast", BIN, "--json"])
        assert rc == 0, out + err
        cls.res = {r["style"]: r for r in json.loads(out)["results"]}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_training_export_is_read_with_torchs_parameters(self):
        r = self.res["legacy_train"]
        # gpucast-export's check passed: every node costed, torch's parameter count, the cost follows the batch
        self.assertEqual((r["check"], r["opset"]), ("ok", 17))
        # torch's count: 8192 x 256 tied embedding/head, 128 x 256 positions, 4 blocks, the final norm
        d, v = 256, 8192
        block = 2 * 2 * d + (3 * d * d + 3 * d + d * d + d) + (d * 4 * d + 4 * d + 4 * d * d + d)
        self.assertEqual(r["params"], v * d + 128 * d + 4 * block + 2 * d)
        self.assertEqual(r["torch_params"], r["params"])

    def test_eval_export_is_warned_and_counts_the_tied_head_twice(self):
        r = self.res["default_eval"]
        self.assertEqual(r["check"], "ok")  # eval exports are not held to torch's count
        self.assertTrue(any("looks like an eval-mode export" in w for w in r["warnings"]), r["warnings"])
        self.assertEqual(r["params"] - r["torch_params"], 8192 * 256)

    def test_dynamo_where_the_torch_has_none(self):
        r = self.res["dynamo_train"]
        if self.torch.split(".")[0] == "1":
            self.assertEqual(r["check"], "export failed")
            self.assertIn("has no attribute 'export'", r["error"])
        else:
            self.assertEqual(r["check"], "ok", r)

    def test_the_two_training_styles_compared(self):
        # No dynamo exporter here: two exports of one network that differ the way the two exporters'
        # graphs do (a decomposed LayerNorm and GELU at opset 14, the fused ops at 17) stand in for
        # them; then another network under the dynamo style must be reported.
        unseen = os.path.join(ROOT, "models", "unseen")
        ref = json.load(open(os.path.join(unseen, "reference.json")))["models"]
        with tempfile.TemporaryDirectory() as d:
            for legacy_file, verdict in (("convnext-opset17.onnx", "agree"), ("maxvit-opset17.onnx", "DIFFER")):
                a = os.path.join(d, "pair.tar.gz")
                entries = [{"model": "convnext", "style": "dynamo_train", "batch": 4, "file": "d.onnx",
                            "torch_params": ref["convnext"]["params"]},
                           {"model": "convnext", "style": "legacy_train", "batch": 4, "file": "l.onnx",
                            "torch_params": ref[legacy_file.split("-")[0]]["params"]}]
                with tarfile.open(a, "w:gz") as t:
                    t.add(os.path.join(unseen, "convnext-opset14.onnx"), arcname="d.onnx")
                    t.add(os.path.join(unseen, legacy_file), arcname="l.onnx")
                    body = json.dumps({"entries": entries}).encode()
                    info = tarfile.TarInfo("manifest.json")
                    info.size = len(body)
                    t.addfile(info, io.BytesIO(body))
                rc, out, err = run(["check", a, "--gpucast", BIN, "--json"])
                self.assertEqual(rc, 0, out + err)
                pair = json.loads(out)["dynamo_vs_legacy"]["convnext"]
                self.assertEqual(pair["agree"], verdict == "agree", pair)
                if verdict == "agree":
                    self.assertEqual(pair["kernels"][0], pair["kernels"][1])
                    self.assertLess(abs(pair["saved_bytes"]), 0.02)
                    self.assertLess(abs(pair["training_flops"]), 0.02)
                rc, out, _ = run(["check", a, "--gpucast", BIN])
                self.assertIn(f"convnext: dynamo / legacy: training FLOPs", out)
                self.assertIn(verdict, out.splitlines()[-1])

    def test_budget_and_bad_archives(self):
        with tempfile.TemporaryDirectory() as d:
            a = os.path.join(d, "skip.tar.gz")
            rc, out, _ = run(["export", "--out", a, "--only", "gpt_small", "--budget", "1e-9"])
            self.assertEqual(rc, 0)
            rc, out, _ = run(["check", a, "--gpucast", BIN, "--json"])
            self.assertEqual(rc, 0)
            self.assertEqual({r["check"] for r in json.loads(out)["results"]}, {"skipped"})
            bad = os.path.join(d, "bad.tar.gz")
            with open(bad, "wb") as f:
                f.write(b"not a tar")
            rc, _, err = run(["check", bad, "--gpucast", BIN])
            self.assertEqual(rc, 2)
            self.assertIn("bad.tar.gz: not an export_probe archive", err)
            # A manifest naming a file the archive lacks: a failure of that export's check.
            lacking = os.path.join(d, "lacking.tar.gz")
            with tarfile.open(lacking, "w:gz") as t:
                body = json.dumps({"entries": [{"model": "m", "style": "legacy_train", "batch": 4,
                                                "file": "m.onnx", "torch_params": 1}]}).encode()
                info = tarfile.TarInfo("manifest.json")
                info.size = len(body)
                t.addfile(info, io.BytesIO(body))
            rc, out, _ = run(["check", lacking, "--gpucast", BIN])
            self.assertEqual(rc, 1)
            self.assertIn("file missing from the archive", out)
            # A training export whose parameters are not torch's: gpucast-export's message, the file named.
            with tarfile.open(self.archive, "r:gz") as t:
                onnx_bytes = t.extractfile("gpt_small.legacy_train.onnx").read()
            wrong = os.path.join(d, "wrong.tar.gz")
            with tarfile.open(wrong, "w:gz") as t:
                for name, body in (("manifest.json", json.dumps({"entries": [
                        {"model": "gpt_small", "style": "legacy_train", "batch": 4, "file": "g.onnx",
                         "torch_params": 5}]}).encode()), ("g.onnx", onnx_bytes)):
                    info = tarfile.TarInfo(name)
                    info.size = len(body)
                    t.addfile(info, io.BytesIO(body))
            rc, out, _ = run(["check", wrong, "--gpucast", BIN])
            self.assertEqual(rc, 1)
            self.assertIn("g.onnx: gpucast counts 5,289,472 parameters, torch 5", out)
        with self.assertRaises(SystemExit):
            with redirect_stderr(io.StringIO()):
                E.main(["export", "--out", "x.tar.gz", "--only", "gpt9"])


if __name__ == "__main__":
    unittest.main()
