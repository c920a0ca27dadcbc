"""Side-by-side benchmarks of Quabla against NumPy and JAX (``python -m benchmarks run``)."""
