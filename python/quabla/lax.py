"""The jax.lax functions PINN code reaches for, with jax.lax's names and semantics."""
from ._indexing import dynamic_slice, dynamic_update_slice, dynamic_index_in_dim, top_k  # noqa: F401
from ._custom import stop_gradient  # noqa: F401
from ._implicit import custom_linear_solve, custom_root  # noqa: F401
from ._control import cond, fori_loop, scan, while_loop  # noqa: F401
