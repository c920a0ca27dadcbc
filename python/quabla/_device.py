"""qb.Device: a device's name with jax.Device's attributes."""
from __future__ import annotations


class Device(str):
    """A device's name ("cpu", "cuda:0", "mlx"), usable wherever a name is (device=,
    device_put), with jax.Device's attributes: ``platform`` ("cpu", "gpu" for CUDA, "mlx"),
    ``id``, ``device_kind`` and ``process_index``."""

    __slots__ = ()

    @property
    def platform(self) -> str:
        return "gpu" if self.startswith("cuda") else self.split(":")[0]

    @property
    def id(self) -> int:  # noqa: A003 (jax.Device's name)
        return int(self.split(":")[1]) if ":" in self else 0

    @property
    def device_kind(self) -> str:
        return {"cpu": "cpu", "gpu": "cuda", "mlx": "mlx"}[self.platform]

    @property
    def process_index(self) -> int:
        from . import process_index
        return process_index()
