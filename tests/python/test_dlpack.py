"""DLPack interchange: zero-copy both ways with NumPy (and JAX and PyTorch where installed),
copies where a zero-copy view is impossible, and clear errors for what cannot be shared."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import quabla as qb
from conftest import check


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_numpy_round_trip_is_zero_copy(dtype):
    src = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    x = qb.from_dlpack(src)
    check(x, src)
    assert np.shares_memory(np.asarray(x), src)
    back = np.from_dlpack(x)
    assert back.dtype == src.dtype and np.shares_memory(back, src)
    assert not back.flags.writeable  # arrays are immutable: exports are read-only


def test_export_keeps_the_storage_alive():
    x = qb.arange(5.0) * 2.0
    view = np.from_dlpack(x)
    del x
    gc.collect()
    np.testing.assert_array_equal(view, [0.0, 2.0, 4.0, 6.0, 8.0])


def test_import_keeps_the_producer_alive_and_computes():
    src = np.linspace(0, 1, 7)
    x = qb.from_dlpack(src)
    del src
    gc.collect()
    np.testing.assert_allclose(np.asarray(qb.jit(lambda a: qb.sin(a) * 2.0)(x)), np.sin(np.linspace(0, 1, 7)) * 2)
    assert float(qb.grad(lambda a: qb.sum(a * a))(x)[3]) == pytest.approx(1.0)


def test_imports_that_need_a_copy():
    base = np.arange(12.0).reshape(3, 4)
    check(qb.from_dlpack(base.T), base.T)  # strided: copied
    check(qb.from_dlpack(np.arange(3, dtype=np.uint8)), np.arange(3, dtype=np.uint8))
    check(qb.from_dlpack(np.arange(3, dtype=np.uint64)), np.arange(3, dtype=np.int64))  # no uint64: int64
    with pytest.raises(ValueError, match="copy=False"):
        qb.from_dlpack(base.T, copy=False)
    fresh = qb.from_dlpack(base, copy=True)
    assert not np.shares_memory(np.asarray(fresh), base)


def test_zero_size_and_scalars():
    check(qb.from_dlpack(np.zeros((0, 3))), np.zeros((0, 3)))
    assert np.from_dlpack(qb.asarray(2.5)).shape == ()
    assert qb.arange(3).__dlpack_device__() == (1, 0)


def test_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        qb.from_dlpack(object())

    class OnGpu:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            raise AssertionError("not reached")

    with pytest.raises(ValueError, match="not the CPU"):
        qb.from_dlpack(OnGpu())
    with pytest.raises(qb.TracerError):
        qb.jit(lambda a: np.from_dlpack(a))(qb.ones(2))


def test_jax_interchange():
    jnp = pytest.importorskip("jax.numpy")
    a = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)  # float32: JAX's default without x64
    check(qb.from_dlpack(a), np.arange(6.0, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(qb.arange(4))), np.arange(4))


def test_torch_interchange():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    x = qb.from_dlpack(t)
    check(x, t.numpy())
    assert torch.from_dlpack(qb.arange(3)).tolist() == [0, 1, 2]


def test_copy_true_exports_a_writable_copy():
    x = qb.arange(4)
    mine = np.from_dlpack(x, copy=True)
    assert mine.flags.writeable
    mine[0] = 9
    assert x.tolist() == [0, 1, 2, 3]
    assert "versioned" in repr(x.__dlpack__(max_version=(1, 0)))  # carries the read-only flag
