#!/usr/bin/env bash
# README command 1: build Quabla (scripts/setup.sh) and run the main example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python examples/pinn_poisson.py
