"""Quabla's main example (for now: arrays, dtypes, masks and math; the README PINN follows
when transforms land). Run it with scripts/run-example.sh."""
import numpy as np

import quabla as qb

# The README Quickstart's array lines.
x = qb.array([-1.0, 0.5, 1.0, 2.0], dtype=qb.float32)  # from a list
w = qb.asarray(np.array([0.3, -0.2, 0.1, 0.4], dtype=np.float32))  # dtype from NumPy
mask = x > 0.0  # comparisons return bool masks
print(x.dtype, w.dtype, mask.dtype, mask.tolist())
print(qb.sin(x).numpy())

# The masked loss of the Quickstart, evaluated eagerly (its gradients need qb.grad).
params = {"w": w, "b": qb.array(0.2, dtype=qb.float32)}
y = qb.tanh(x * params["w"] + params["b"])
loss = qb.sum(qb.where(x > 0.0, y, 0.0) ** 2)  # masked entries contribute 0
print(loss.dtype, loss.item())

# Explicit promotion: Python scalars are weak, float32 with float64 needs astype.
print((0.5 * x).dtype, (x + qb.ones(4, dtype=qb.float64).astype(qb.float32)).dtype)
try:
    x + qb.ones(4)
except ValueError as err:
    print("ValueError:", err)

# Shapes, reductions and products.
a = qb.arange(1.0, 7.0).reshape(2, 3)
print(a @ a.T)
print(qb.softmax(a, axis=-1))
print(qb.logsumexp(a, axis=1), qb.var(a, axis=0), a[:, ::-1])
