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


def _run(path):
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True).stdout


def test_at_a_glance_prints_pi_and_a_tiny_loss():
    out = _run(ROOT / "examples" / "glance.py").strip()
    assert out.startswith("w = 3.141593, loss = ")
    loss = float(out.split("loss = ")[1])
    assert loss < 1e-10
    readme = (ROOT / "README.md").read_text()
    assert "w = 3.141593, loss = 1.5e-13" in readme
    assert out == "w = 3.141593, loss = 1.5e-13"


def _readme_block_after(readme: str, marker: str) -> str:
    start = readme.index(marker)
    code_start = readme.index("```python\n", start) + len("```python\n")
    return readme[code_start:readme.index("```", code_start)]


def test_quickstart_transform_lines_print_the_documented_values():
    """The README Quickstart, run as one session, prints the product description's values
    (float32 results to float32 rounding)."""
    readme = (ROOT / "README.md").read_text()
    arrays = _readme_block_after(readme, "## Quickstart")
    transforms = _readme_block_after(readme, "grad and value_and_grad differentiate")
    out = subprocess.run([sys.executable, "-c", arrays + transforms], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    expected = [
        "f32 0.6748224496841431",
        [-0.0, 0.09867792576551437, 0.53318190574646, 1.2793999910354614, 1.3702377080917358],
        [0.0, -0.03947117179632187, 0.053318191319704056, 0.2558799982070923],
        [0.2575097382068634, 0.5868375897407532],
        [0.6748224496841431, 1.3702377080917358],
    ]
    assert out[2] == expected[0]
    import ast
    import numpy as np
    line3 = out[3].replace("] ", "], ")
    w_grads, b_grad = ast.literal_eval(line3)
    np.testing.assert_allclose(w_grads + [b_grad], expected[1], rtol=2e-7)
    np.testing.assert_allclose(ast.literal_eval(out[4]), expected[2], rtol=2e-7)
    np.testing.assert_allclose(ast.literal_eval(out[5]), expected[3], rtol=2e-7)
    np.testing.assert_allclose([float(v) for v in out[6].split()], expected[4], rtol=2e-7)


def test_pinn_poisson_example_reaches_the_documented_error():
    import importlib.util
    spec = importlib.util.spec_from_file_location("pinn_poisson", ROOT / "examples" / "pinn_poisson.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    err = mod.main(figure=None)
    assert err <= 3e-4
    assert "max abs error = 2.44e-04" in (ROOT / "README.md").read_text()
    assert abs(err - 2.44e-4) < 2e-6


CONTROL_FLOW_OUTPUT = """E(10) = 0.003823, dE/dk = -0.039438
d2E/dk2 = 0.390024
1 scan node
10.0 [0.0, 0.0, 1.0, 3.0, 6.0]
0.7071067811865476
"""


def test_control_flow_example_prints_what_the_readme_shows():
    assert _run(ROOT / "examples" / "control_flow.py") == CONTROL_FLOW_OUTPUT
    readme = (ROOT / "README.md").read_text()
    assert CONTROL_FLOW_OUTPUT.strip() in readme
    code = (ROOT / "examples" / "control_flow.py").read_text().split("import quabla as qb\n", 1)[1].strip()
    assert code in readme


PYTREE_OUTPUT = """(2, 2) laplacian = 0.319182
{'a': (2,), 'b': (2,), 'w': (2, 2)}
(2, 2, 2)
"""


def test_pytree_jacobian_section_prints_what_the_readme_shows():
    readme = (ROOT / "README.md").read_text()
    code = "import quabla as qb\n" + _readme_block_after(readme, "## Jacobians and Hessians of pytrees")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == PYTREE_OUTPUT
    assert PYTREE_OUTPUT.strip() in readme


LAPLACIAN_OUTPUT = """steps = 3000, loss = 3.55e-04, max abs error = 1.6e-04
laplacian at (0.3, 0.6): -15.208273 (trace of the Hessian: -15.208273)
"""


def test_laplacian_section_shows_the_example_and_what_it_prints():
    out = _run(ROOT / "examples" / "laplacian_pinn.py")
    readme = (ROOT / "README.md").read_text()
    assert LAPLACIAN_OUTPUT.strip() in readme
    code = (ROOT / "examples" / "laplacian_pinn.py").read_text()
    shown = _readme_block_after(readme, "## Laplacians in a PINN loss")
    assert shown.strip() in code and "qb.laplacian(u, argnums=1)" in shown
    lines = out.splitlines()
    # the Laplacian by the collapsed pass and by the Hessian agree to the digits printed
    by_lap, by_hess = lines[1].split(": ", 1)[1].replace(")", "").split(" (trace of the Hessian: ")
    assert by_lap == by_hess
    # training digits repeat on this machine; elsewhere the error must still be small
    if out != LAPLACIAN_OUTPUT:
        assert float(lines[0].split("max abs error = ")[1]) < 1e-3, out


def test_quickstart_compiler_facade_block_prints_what_the_readme_shows():
    """The Quickstart's compiler-facade block, run after the blocks before it (one session
    as the README says), prints the lines the README shows (the product description's cpu
    line, verbatim)."""
    readme = (ROOT / "README.md").read_text()
    session = (_readme_block_after(readme, "## Quickstart") + _readme_block_after(readme, "grad and value_and_grad differentiate")
               + _readme_block_after(readme, "The compiler facade of Quabla v0.1"))
    out = subprocess.run([sys.executable, "-c", session], capture_output=True, text=True, check=True).stdout
    facade = out.splitlines()[-2:]
    expected = ["{'cpu': True, 'cuda': False, 'mlx': False}",
                "cpu 0.6748224496841431 [-0.0, 0.09867792576551437, 0.53318190574646, 1.2793999910354614]"]
    assert facade == expected
    assert "\n".join(expected) in readme
