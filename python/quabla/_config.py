"""Process-wide settings that compiled programs depend on."""

# Bumped whenever qb.set_default_dtype changes the default: part of every jit signature, so
# programs traced under one default are not reused under another.
default_dtype_epoch = 0

# qb.disable_jit(): jitted functions run their Python body directly (for debugging).
jit_disabled = False


class Config:
    """jax.config's interface for the settings Quabla has: ``qb.config.update(name, value)``
    and reading them as attributes.

    - ``jax_enable_x64``: True makes float64 the default float dtype (Quabla's default
      already), False float32 (JAX's default) -- qb.set_default_dtype underneath.
    - ``jax_disable_jit``: jitted functions run their Python body (qb.disable_jit).
    - ``jax_platforms`` / ``jax_platform_name``: "cpu" (or "") is accepted; programs run
      where jit's device= or their device arrays say.
    - ``jax_default_matmul_precision``, ``jax_numpy_rank_promotion`` ("allow"): accepted,
      Quabla's matmuls are exact float32/float64 and its broadcasting NumPy's;
      ``jax_threefry_partitionable`` (True: Quabla's bits are JAX's partitionable ones) and
      ``jax_default_prng_impl`` ("threefry2x32") likewise.
    - JAX's logging, caching and checking flags (``jax_log_compiles``,
      ``jax_compilation_cache_dir``, ``jax_traceback_filtering``, ``jax_enable_checks``, ...)
      are accepted and remembered but change nothing; ``jax_debug_nans`` / ``jax_debug_infs``
      set to True warn once that Quabla does not check results for NaN/inf.
    """

    _accepted = {"jax_platforms": ("", "cpu"), "jax_platform_name": ("", "cpu"),
                 "jax_default_matmul_precision": (None, "highest", "float32", "default", "bfloat16_3x", "tensorfloat32"),
                 "jax_numpy_rank_promotion": ("allow",), "jax_threefry_partitionable": (True,),
                 "jax_default_prng_impl": ("threefry2x32",)}
    _no_effect = ("jax_log_compiles", "jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
                  "jax_persistent_cache_min_entry_size_bytes", "jax_traceback_filtering", "jax_enable_checks",
                  "jax_check_tracer_leaks", "jax_explain_cache_misses", "jax_debug_nans", "jax_debug_infs",
                  "jax_dynamic_shapes", "jax_raise_persistent_cache_errors", "jax_numpy_dtype_promotion")

    def __init__(self):
        self._values = {}

    def update(self, name: str, value) -> None:
        if name == "jax_enable_x64":
            from . import _core
            from ._constructors import set_default_dtype
            set_default_dtype(_core.float64 if value else _core.float32)
            return
        if name == "jax_disable_jit":
            global jit_disabled
            jit_disabled = bool(value)
            return
        if name in self._accepted:
            if value not in self._accepted[name]:
                raise ValueError(f"config.update({name!r}, {value!r}): Quabla accepts {self._accepted[name]} here")
            self._values[name] = value
            return
        if name in self._no_effect:
            if name == "jax_numpy_dtype_promotion" and value not in ("standard", "strict"):
                raise ValueError(f"config.update({name!r}, {value!r}): expected 'standard' or 'strict'")
            if name in ("jax_debug_nans", "jax_debug_infs") and value and not self._values.get(name):
                import warnings
                warnings.warn(f"config.update({name!r}, True): Quabla does not check results for "
                              f"{'NaN' if name.endswith('nans') else 'inf'} values; the setting has no effect",
                              RuntimeWarning, stacklevel=2)
            self._values[name] = value
            return
        raise ValueError(f"config.update: {name!r} is not a setting Quabla has; it has jax_enable_x64, "
                         f"jax_disable_jit, {', '.join(sorted(self._accepted))} and JAX's logging and checking "
                         f"flags ({', '.join(self._no_effect)}), which change nothing here")

    def read(self, name: str):
        return getattr(self, name)

    def __getattr__(self, name):
        if name.startswith("jax_") and (name in self._accepted or name in self._no_effect):
            return self.__dict__.get("_values", {}).get(name, self._defaults.get(name))
        raise AttributeError(f"qb.config has no setting {name!r}")

    _defaults = {"jax_platforms": "", "jax_platform_name": "", "jax_default_matmul_precision": None,
                 "jax_numpy_rank_promotion": "allow", "jax_threefry_partitionable": True,
                 "jax_default_prng_impl": "threefry2x32", "jax_numpy_dtype_promotion": "standard",
                 "jax_log_compiles": False, "jax_debug_nans": False, "jax_debug_infs": False,
                 "jax_enable_checks": False, "jax_traceback_filtering": "auto"}

    @property
    def jax_enable_x64(self) -> bool:
        from . import _core
        return _core.default_dtype() == _core.float64

    @property
    def jax_disable_jit(self) -> bool:
        return jit_disabled


config = Config()


class disable_jit:
    """``with qb.disable_jit():`` jitted functions run their Python body directly (values
    are concrete inside: print them, use them in Python control flow); restored on exit."""

    def __init__(self, disable: bool = True):
        global jit_disabled
        self._previous = jit_disabled
        jit_disabled = bool(disable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global jit_disabled
        jit_disabled = self._previous
        return False
