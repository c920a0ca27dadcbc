#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in under 8 minutes and without network:
# builds Quabla with that machine's python3 (build requirements from its image; wheels of any
# missing one carried in .whl/), then runs the CUDA tests on the GPU, the README PINN on
# device="cuda:0" and the GPU benchmarks beside JAX and PyTorch (benchmarks/gpu.py), and
# writes what it saw under OUTDIR (at most 8 files):
#   summary.txt devices.json nvidia-smi.txt build.log tests.log examples.log bench.log gpu-bench.json
#   scripts/gpu-check.sh OUTDIR            on the GPU machine
#   scripts/gpu-check.sh OUTDIR --dry-run  anywhere: the same steps on the host emulator, short
# The GPU image lacks scipy-openblas32 (Quabla's BLAS): fetch its wheel here first, into the
# git-ignored .whl/ (echo /.whl/ >> .git/info/exclude), and name .whl in the device run's carry:
#   .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux_2_28_x86_64 -d .whl scipy-openblas32
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR [--dry-run]}
dry=${2:-}
cd "$(dirname "$0")/.."
mkdir -p "$out"
: >"$out/summary.txt"
PY=${PYTHON:-python3}
begin=$(date +%s)
say() { echo "== $*" | tee -a "$out/summary.txt"; }
elapsed() { echo "$(($(date +%s) - begin)) s"; }

if [[ -d .whl ]] && compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/qb-site .whl/*.whl >"$out/build.log" 2>&1
  export PYTHONPATH=/tmp/qb-site${PYTHONPATH:+:$PYTHONPATH}
fi
build=${QUABLA_GPU_BUILD_DIR:-build-gpu}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! { cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DQUABLA_BUILD_PYTHON=ON \
         -DPython_EXECUTABLE="$(command -v "$PY")" && cmake --build "$build" -j"$(nproc)"; } >>"$out/build.log" 2>&1; then
  say "build failed after $(elapsed) (build.log)"
  tail -30 "$out/build.log"
  exit 1
fi
pkg=$build/pkg
rm -rf "$pkg" && mkdir -p "$pkg" && cp -r python/quabla "$pkg/" && cp "$build"/_core*.so "$pkg/quabla/"
export PYTHONPATH=$PWD/$pkg:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
say "built in $(elapsed)"

mode=gpu
if [[ $dry == --dry-run ]]; then
  export QUABLA_CUDA_EMULATOR=1
  mode=emulator
fi
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "no nvidia-smi" >"$out/nvidia-smi.txt"
"$PY" -c 'import json, quabla as qb; print(json.dumps({"devices": qb.devices(), "cuda": qb._cuda.info()}))' \
  >"$out/devices.json" 2>&1
say "devices: $(cat "$out/devices.json")"

QUABLA_TEST_CUDA=$mode timeout 240 "$PY" -m pytest tests/python/test_cuda_backend.py -q -p no:cacheprovider \
  -o addopts="" >"$out/tests.log" 2>&1
say "tests ($mode): $(tail -1 "$out/tests.log") after $(elapsed)"

{
  timeout 60 "$PY" examples/pinn_poisson.py --no-figure
  timeout 90 "$PY" examples/pinn_poisson.py --no-figure --device cuda:0
} >"$out/examples.log" 2>&1
say "README PINN (cpu, then cuda:0): $(grep -h 'steps =' "$out/examples.log" | tr '\n' ' ') after $(elapsed)"

bench=()
[[ $mode == emulator ]] && bench=(--quick --no-reference)
timeout 200 "$PY" -m benchmarks.gpu --device cuda:0 "${bench[@]}" --json "$out/gpu-bench.json" >"$out/bench.log" 2>&1
say "benchmarks: exit $? after $(elapsed) (bench.log, gpu-bench.json)"
