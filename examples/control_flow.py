"""Control flow (README "Control flow"): a 10,000-step loop is one IR node, and its
gradient keeps O(sqrt T) checkpoints instead of a tape of every step."""
import quabla as qb


def simulate(k, steps=10_000, dt=1e-3):  # damped oscillator x'' = -x - k x'
    def step(i, state):
        x, v = state
        v = v - dt * (x + k * v)
        return (x + dt * v, v)

    return qb.fori_loop(0, steps, step, (qb.array(1.0), qb.array(0.0)))


def energy(k):  # at t = 10
    x, v = simulate(k)
    return 0.5 * (x**2 + v**2)


k = qb.array(0.5)
print(f"E(10) = {energy(k).item():.6f}, dE/dk = {qb.grad(energy)(k).item():.6f}")
print(f"d2E/dk2 = {qb.hessian(energy)(k).item():.6f}")  # forward over reverse through the loop
text = qb.jit(energy).lower(k).as_text()
print(sum(line.startswith("  %") and "= scan(" in line for line in text.splitlines()), "scan node")

# scan: carry and stacked outputs; cond: only the selected branch runs
total, partial = qb.scan(lambda c, x: (c + x, c), 0.0, qb.arange(5.0))
print(total.item(), partial.tolist())
print(qb.cond(k > 0, lambda k: qb.sqrt(k), lambda k: qb.log(-k), k).item())
