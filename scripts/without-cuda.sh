#!/usr/bin/env bash
# Runs a command as on a machine with no CUDA libraries at all: in a private mount namespace
# every CUDA toolkit folder under /usr/local and the nvidia-* wheels of .venv are covered by
# an empty folder, so no driver, driver stub, NVRTC or cuBLAS can be found. CI runs the
# README test command under it (the CPU suite never needs CUDA). Needs root and unshare.
#   scripts/without-cuda.sh COMMAND [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${QUABLA_WITHOUT_CUDA_INSIDE:-}" == 1 ]]; then
  unset QUABLA_WITHOUT_CUDA_INSIDE
  empty=$(mktemp -d)
  for d in /usr/local/cuda* .venv/lib/python3*/site-packages/nvidia; do
    if [[ -d $d && ! -L $d ]]; then mount --bind "$empty" "$d"; fi
  done
  if [[ -x .venv/bin/python ]]; then
    .venv/bin/python - <<'PY'
import sys
import quabla as qb
info = qb._cuda.info()
if info["nvrtc_version"] or info["gpu_count"]:
    sys.exit(f"scripts/without-cuda.sh: CUDA libraries are still visible: {info}")
print(f"== without CUDA: {info['reason']}; {info['nvrtc_reason']}")
PY
  fi
  exec "$@"
fi
if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null || ! command -v mount >/dev/null; then
  echo "error: scripts/without-cuda.sh needs root, unshare and mount (util-linux)" >&2
  exit 1
fi
QUABLA_WITHOUT_CUDA_INSIDE=1 exec unshare --mount --propagation private "$0" "$@"
