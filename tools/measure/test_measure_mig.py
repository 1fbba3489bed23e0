#!/usr/bin/python3
"""measure.py on a GPU in MIG mode: nvidia-smi's N/A is a clear error, not a float() traceback.

run: /usr/bin/python3 -m unittest discover -s tools/measure -p 'test_*.py'
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure as M  # noqa: E402


class MigModeTest(unittest.TestCase):
    def test_not_available_utilization_names_mig(self):
        with self.assertRaisesRegex(ValueError, r"nvidia-smi reports N/A \('\[N/A\], 3, 512'\): a GPU in MIG "
                                                r"mode has no utilization.gpu; this harness measures whole GPUs only"):
            M.parse_smi("[N/A], 3, 512\n")


if __name__ == "__main__":
    unittest.main()
