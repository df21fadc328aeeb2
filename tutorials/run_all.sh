#!/usr/bin/env bash
# Runs every tutorial on the default device (CUDA when a GPU is present, else CPU).
# Usage: tutorials/run_all.sh BUILD_DIR
set -euo pipefail
build=${1:-build/dev}
bin=$build/tutorials
run() { echo; echo "\$ $*"; "$@"; }

run "$bin/00_tensors_and_views"
