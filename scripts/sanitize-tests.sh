#!/usr/bin/env bash
# The C++ tests and the hostile-input table (tests/python/test_hostile_sizes.py) under
# AddressSanitizer + UndefinedBehaviorSanitizer, in their own build directory (build-asan/),
# so a memory error that happens not to crash still fails. Needs .venv (scripts/setup.sh).
#   scripts/sanitize-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VPY=.venv/bin/python
[[ -x $VPY ]] || { echo "error: run scripts/setup.sh first" >&2; exit 1; }
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/quabla-ccache}
# Paths under the checkout hash as relative ones, so another clone (CI's) hits the same cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
build=build-asan
.venv/bin/cmake -S . -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$PWD/.venv/bin/ninja" \
  -DQUABLA_SANITIZE=ON -DQUABLA_BUILD_TESTS=ON -DQUABLA_BUILD_PYTHON=ON -DQUABLA_WERROR=$werror \
  -DPython_EXECUTABLE="$PWD/$VPY" >/dev/null
.venv/bin/cmake --build "$build"

# Python's own allocations are not instrumented and it keeps objects alive at exit: leak
# reports there would be noise. Every other ASan and UBSan finding aborts. A huge request
# returns null (std::bad_alloc, MemoryError) as the regular allocator does, instead of
# ASan's own abort.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== C++ core under ASan + UBSan: ctest in $build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1 \
  .venv/bin/ctest --test-dir "$build" --output-on-failure -j2 --timeout 600

echo "== Hostile inputs, integer kernels, traced indexing, DLPack and the loop compiler under ASan + UBSan"
# The sanitised extension beside the package's Python files; python -S skips the .pth
# hook of the editable install (which would import the regular build), and site-packages
# comes back through PYTHONPATH for pytest and NumPy.
pkg=$build/pkg/quabla
mkdir -p "$pkg"
for f in python/quabla/*.py; do ln -sf "$PWD/$f" "$pkg/"; done
for d in python/quabla/*/; do  # subpackages (quabla.legacy)
  [[ $(basename "$d") == __pycache__ ]] || ln -sfn "$PWD/${d%/}" "$pkg/"
done
ln -sf "$PWD/$(ls $build/_core*.so)" "$pkg/"
site=$($VPY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
runtime="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
LD_PRELOAD="$runtime" PYTHONPATH="$PWD/$build/pkg:$site" \
  $VPY -S -m pytest tests/python/test_hostile_sizes.py tests/python/test_integers.py \
  tests/python/test_traced_indexing.py tests/python/test_dlpack.py tests/python/test_loop_scalar.py \
  -q -p no:cacheprovider -k "not jax and not torch and not subprocess_cache" "$@"
