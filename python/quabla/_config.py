"""Process-wide settings that compiled programs depend on."""

# Bumped whenever qb.set_default_dtype changes the default: part of every jit signature, so
# programs traced under one default are not reused under another.
default_dtype_epoch = 0
