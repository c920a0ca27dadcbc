#!/usr/bin/env bash
# README command 2: build Quabla with its C++ test suite and run every test:
# GoogleTest through ctest for the C++ core, then pytest for the Python package.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
build_dir=$(ls -d build/cp3*/ | head -n 1)
echo "== C++ core: ctest in $build_dir"
ctest_bin=.venv/bin/ctest
[[ -x $ctest_bin ]] || ctest_bin=ctest
"$ctest_bin" --test-dir "$build_dir" --output-on-failure -j2 --timeout 300
echo "== Python: pytest"
exec .venv/bin/python -m pytest tests/python -q "$@"
