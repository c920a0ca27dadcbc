#!/usr/bin/env bash
# The MLX backend's build and tests. Installs mlx[cpu] from PyPI (MLX's CPU build for
# Linux: its C++ library, headers and CMake config) into build-mlx/site (not into .venv, so
# the regular build stays the build without MLX), builds Quabla against it in build-mlx/,
# and runs tests/python/test_mlx_backend.py on that build with QUABLA_REQUIRE_MLX=1 (its
# tests fail instead of skipping). Needs .venv (scripts/setup.sh).
#   scripts/mlx-tests.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
VPY=$PWD/.venv/bin/python
[[ -x $VPY ]] || { echo "error: run scripts/setup.sh first" >&2; exit 1; }
build=build-mlx
site=$PWD/$build/site
if ! PYTHONPATH=$site "$VPY" -c "import mlx.core" 2>/dev/null; then
  "$VPY" -m pip install -q --target "$site" "mlx[cpu]>=0.25"
fi
export PYTHONPATH=$site
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/quabla-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
.venv/bin/cmake -S . -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$PWD/.venv/bin/ninja" -DQUABLA_BUILD_PYTHON=ON \
  -DQUABLA_WERROR=$werror -DPython_EXECUTABLE="$VPY" >/dev/null
grep -q "^MLX_DIR:PATH=.*mlx" "$build/CMakeCache.txt" || { echo "error: CMake did not find MLX" >&2; exit 1; }
.venv/bin/cmake --build "$build"

echo "== MLX backend (mlx $(PYTHONPATH=$site "$VPY" -c 'import mlx.core as mx; print(mx.__version__)'))"
# The MLX build's extension beside the package's Python files (python -S skips the editable
# install's .pth hook, which would import the regular build).
pkg=$build/pkg/quabla
mkdir -p "$pkg"
for f in python/quabla/*.py; do ln -sf "$PWD/$f" "$pkg/"; done
for d in python/quabla/*/; do
  [[ $(basename "$d") == __pycache__ ]] || ln -sfn "$PWD/${d%/}" "$pkg/"
done
ln -sf "$PWD/$(ls $build/_core*.so)" "$pkg/"
venv_site=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
QUABLA_REQUIRE_MLX=1 PYTHONPATH="$PWD/$build/pkg:$site:$venv_site" \
  "$VPY" -S -m pytest tests/python/test_mlx_backend.py -q -p no:cacheprovider "$@"
