"""Runs one test module of python/tests for ctest: exit 0 when its tests pass, 1 when one
fails, 77 (ctest's SKIP_RETURN_CODE) when every test was skipped (no torch, no GPU).

    python3 python/tests/run_tests.py test_api [KFUSE_LIBRARY]
"""

import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.dirname(here))
if len(sys.argv) > 2:
    os.environ["KFUSE_LIBRARY"] = sys.argv[2]
suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1])
result = unittest.TextTestRunner(verbosity=2).run(suite)
if not result.wasSuccessful():
    sys.exit(1)
sys.exit(77 if result.testsRun and len(result.skipped) == result.testsRun else 0)
