"""The tests of the benchmarks import the bench scripts as modules: bench/ goes on the path for this folder only
(the test-support modules in tests/support/ never import bench/)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
