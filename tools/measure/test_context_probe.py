#!/usr/bin/python3
"""context_probe.py without a GPU: its two refusals, each written to its JSON with exit status 2.
(The stages themselves need a CUDA device: tools/measure/device_check.sh runs them on a lent one.)

run: /usr/bin/python3 -m unittest discover -s tools/measure -p 'test_*.py'
"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import context_probe as P  # noqa: E402


class ContextProbeTest(unittest.TestCase):
    def probe(self, d, smi):
        bin_dir = os.path.join(d, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        if smi is not None:
            with open(os.path.join(bin_dir, "nvidia-smi"), "w") as f:
                f.write(smi)
            os.chmod(os.path.join(bin_dir, "nvidia-smi"), 0o755)
        saved = os.environ["PATH"]
        os.environ["PATH"] = bin_dir + (os.pathsep + saved if smi is not None else "")
        try:
            with redirect_stdout(io.StringIO()) as out:
                rc = P.main(["--out", os.path.join(d, "c.json")])
        finally:
            os.environ["PATH"] = saved
        with open(os.path.join(d, "c.json")) as f:
            return rc, json.load(f), out.getvalue()

    def test_without_nvidia_smi(self):
        with tempfile.TemporaryDirectory() as d:
            rc, res, out = self.probe(d, None)
        self.assertEqual(rc, 2)
        self.assertIn("nvidia-smi", res["error"])
        self.assertEqual(res["stages"], [])
        self.assertIn("context_probe: ", out)

    @unittest.skipIf(__import__("torch").cuda.is_available(), "a CUDA device is here: the refusal cannot be shown")
    def test_without_a_cuda_device(self):
        with tempfile.TemporaryDirectory() as d:
            rc, res, _ = self.probe(d, "#!/bin/sh\necho 1234\n")
        self.assertEqual(rc, 2)
        self.assertEqual((res["before_mib"], res["error"]), (1234.0, "RuntimeError: no CUDA device visible to torch"))


if __name__ == "__main__":
    unittest.main()
