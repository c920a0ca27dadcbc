#!/usr/bin/env bash
# Creates .venv (once), installs the build and test requirements from PyPI, and builds
# Quabla as an editable install whose CMake build directory (build/) persists, so a later
# edit rebuilds only what changed (ninja, ccache when present).
#   scripts/setup.sh          build the package
#   scripts/setup.sh --tests  also build the C++ GoogleTest suite
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=OFF
[[ "${1:-}" == "--tests" ]] && with_tests=ON

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "error: Quabla needs Python >= 3.10 (found: $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.x" >&2
  exit 1
fi
if ! command -v c++ >/dev/null && ! command -v g++ >/dev/null && ! command -v clang++ >/dev/null; then
  echo "error: no C++20 compiler found; install one (Debian/Ubuntu: apt-get install g++)" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  if ! "$PY" -m venv .venv 2>/dev/null; then
    echo "error: python venv module missing; install it (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
  fi
fi
VPY=.venv/bin/python

# Optional system tools: ccache speeds up rebuilds; GoogleTest is needed for the C++ tests.
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  need=()
  command -v ccache >/dev/null || need+=(ccache)
  if [[ $with_tests == ON ]] && [[ ! -e /usr/include/gtest/gtest.h ]]; then need+=(libgtest-dev); fi
  # Open MPI for qb.distributed's tests (tests/python/test_distributed.py runs mpirun -np 2).
  if [[ $with_tests == ON ]] && ! command -v mpirun >/dev/null; then need+=(openmpi-bin libopenmpi-dev); fi
  if ((${#need[@]})); then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null 2>&1 ||
      echo "note: could not apt-get install ${need[*]}; continuing without" >&2
  fi
fi
if [[ $with_tests == ON ]] && [[ ! -e /usr/include/gtest/gtest.h ]]; then
  echo "error: GoogleTest headers not found; install them (Debian/Ubuntu: apt-get install libgtest-dev)" >&2
  exit 1
fi

stamp=.venv/.quabla-deps
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  "$VPY" -m pip install -q --upgrade pip
  "$VPY" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" "scipy-openblas32>=0.3.27" cmake ninja \
    pytest numpy hypothesis mpmath scipy matplotlib
  # qb.distributed's MPI bindings (optional: without them its tests skip).
  "$VPY" -m pip install -q "mpi4py>=3.1" || echo "note: could not install mpi4py; qb.distributed is untested here" >&2
  touch "$stamp"
fi

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/quabla-ccache}
# Paths under the checkout hash as relative ones, so another clone (CI's) hits the same cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
"$VPY" -m pip install -q --no-build-isolation --no-deps -e . \
  -Ccmake.define.QUABLA_BUILD_TESTS=$with_tests -Ccmake.define.QUABLA_WERROR=$werror
