#!/usr/bin/env bash
# Runs every tutorial on the default device (CUDA when a GPU is present, else CPU).
# Usage: tutorials/run_all.sh BUILD_DIR
set -euo pipefail
build=${1:-build/dev}
bin=$build/tutorials
run() { echo; echo "\$ $*"; "$@"; }

run "$bin/00_tensors_and_views"
# Part 1 at the series' two sizes: overhead-bound (64) and compute-bound (4096).
# Artifacts: traces/01_matmul_add/<size>_<dtype>_<cold|warm>_<eager|fused>.{json,txt}
run "$bin/01_matmul_add" --size 64
run "$bin/01_matmul_add" --size 4096
# Part 2: one Linear (eager, then with the weight pre-transposed), then the GeGLU MLP's three paths.
# Artifacts: traces/02_linear/..., traces/03_mlp/...
run "$bin/02_linear"
run "$bin/02_linear" --fused
run "$bin/03_mlp" --path eager
run "$bin/03_mlp" --path fused
run "$bin/03_mlp" --path merged
# Part 3: attention, five paths at the series' shape (B4 H16 S1024 D64 bf16, causal). On a CPU the
# fused paths say why they cannot run and run the math path instead.
# Artifacts: traces/04_attention/4x16x1024x64_bf16_cold_<path>.{json,txt}
for path in naive inplace math flash_v1 flash_v2; do
  run "$bin/04_attention" --path "$path"
done
