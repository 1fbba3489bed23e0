"""models/catalog.json is what tools/export_workloads.py writes from tools/workloads.py.

The catalog's job facts (loader, data location, optimizer) are read by `gpucast train` and the
memory model; an export that rewrote them from a tools/workloads.py that lacks one (the optimizer
was once added to the catalog by hand only) would silently change every prediction.
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class CatalogTest(unittest.TestCase):
    def test_catalog_is_what_the_exporter_writes(self):
        import export_workloads as E  # torch and onnx: Debian's python3-torch, python3-onnx
        with open(os.path.join(HERE, "..", "models", "catalog.json")) as f:
            committed = json.load(f)
        written = {"version": E.CATALOG_VERSION, "gpu": "RTX3090",
                   "workloads": [E.catalog_entry(w) for w in E.W.WORKLOADS]}
        self.assertEqual(len(written["workloads"]), len(committed["workloads"]))
        for mine, theirs in zip(written["workloads"], committed["workloads"]):
            self.assertEqual(mine, theirs, f'{theirs["model"]}/{theirs["dataset"]}')
        self.assertEqual(written, committed)

    def test_every_workload_states_its_optimizer(self):
        import workloads as W
        for w in W.WORKLOADS:
            self.assertIn(w["attrs"].get("optimizer"), {"sgd", "sgd_momentum", "adam", "adamw"},
                          f'{w["model"]}/{w["dataset"]}')


if __name__ == "__main__":
    unittest.main()
