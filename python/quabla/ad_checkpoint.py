"""jax.ad_checkpoint's names: checkpoint (remat), checkpoint_name and checkpoint_policies."""
from ._custom import checkpoint, checkpoint_name, checkpoint_policies, remat  # noqa: F401

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]
