"""tools/opset_pairs.py: one network at two opsets predicts alike; a pair that is not one network is
reported. Needs GPUCAST (the binary) and GPUCAST_TEST_PREDICTOR (make test sets both; without the
predictor the test trains one)."""
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import opset_pairs  # noqa: E402

UNSEEN = os.path.join(HERE, "..", "models", "unseen")


class OpsetPairs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gpucast = os.environ.get("GPUCAST")
        if not cls.gpucast:
            raise RuntimeError("set GPUCAST to the gpucast binary (make test does)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.predictor = os.environ.get("GPUCAST_TEST_PREDICTOR")
        if not cls.predictor:
            cls.predictor = os.path.join(cls.tmp.name, "p.json")
            subprocess.run([cls.gpucast, "train", "--out", cls.predictor, "--quiet"], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_tool(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = opset_pairs.main(["--gpucast", self.gpucast, "--predictor", self.predictor] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_the_shipped_exports_predict_alike(self):
        # ConvNeXt's LayerNorms are decomposed at opset 14 (one at its head over a 1x1 map) and one
        # LayerNormalization node each at 17; GPT's too, with GELU as an Erf chain at 14.
        rc, out, _ = self.run_tool("--only", "convnext", "gpt_buffer")
        self.assertEqual(rc, 0, out)
        self.assertIn("4 pairs compared; 0 differ", out)
        rows = [line for line in out.splitlines() if line.startswith("| convnext | 1 |")]
        self.assertEqual(len(rows), 1)
        kernels = rows[0].split("|")[3].split("/")
        self.assertEqual(kernels[0].strip(), kernels[1].strip())

    def test_two_networks_under_one_name_are_reported(self):
        d = os.path.join(self.tmp.name, "mixed")
        os.makedirs(d)
        shutil.copy(os.path.join(UNSEEN, "convnext-opset14.onnx"), os.path.join(d, "convnext-opset14.onnx"))
        shutil.copy(os.path.join(UNSEEN, "maxvit-opset17.onnx"), os.path.join(d, "convnext-opset17.onnx"))
        rc, out, _ = self.run_tool("--dir", d, "--only", "convnext")
        self.assertEqual(rc, 1, out)
        self.assertIn("2 pairs compared; 2 differ", out)
        self.assertIn("convnext x1, convnext x8", out)

    def test_refusals(self):
        rc, _, err = self.run_tool("--only", "no_such_net")
        self.assertEqual(rc, 2)
        self.assertIn("unknown architecture(s) no_such_net", err)
        rc, _, err = self.run_tool("--dir", self.tmp.name, "--opsets", "13", "17")
        self.assertEqual(rc, 2)
        self.assertIn("no architecture has both opset 13 and 17 files in " + self.tmp.name, err)


if __name__ == "__main__":
    unittest.main()
