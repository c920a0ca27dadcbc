"""The README Quickstart's array lines print what the product description shows."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = """f32 f32 bool [False, True, True, True]
[-0.84147096  0.47942555  0.84147096  0.9092974 ]
"""


def test_quickstart_array_lines_print_the_documented_values():
    code = """
import numpy as np
import quabla as qb

x = qb.array([-1.0, 0.5, 1.0, 2.0], dtype=qb.float32)  # from a list
w = qb.asarray(np.array([0.3, -0.2, 0.1, 0.4], dtype=np.float32))  # dtype from NumPy
mask = x > 0.0  # comparisons return bool masks
print(x.dtype, w.dtype, mask.dtype, mask.tolist())
print(qb.sin(x).numpy())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == EXPECTED


def test_readme_shows_the_same_code_and_output():
    readme = (ROOT / "README.md").read_text()
    assert EXPECTED.strip() in readme
    assert "mask = x > 0.0  # comparisons return bool masks" in readme


def test_main_example_runs():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith(EXPECTED)
    assert "f32 0.6748224496841431" in out  # the masked loss of the Quickstart, eagerly
