#!/usr/bin/env bash
# Runs every tutorial.
# Usage: tutorials/run_all.sh BUILD_DIR              the series' runs, on the default device
#                                                     (CUDA when a GPU is present, else CPU)
#        tutorials/run_all.sh BUILD_DIR --cpu-small  every tutorial and mode on the CPU at small
#                                                     sizes, artifacts in a scratch folder (the
#                                                     sanitize build's pass over the tutorials)
# Stops at the first tutorial that fails (its check, an error, a sanitizer report).
set -euo pipefail
build=${1:-build/dev}
mode=${2:-}
bin=$build/tutorials
run() { echo; echo "\$ $*"; "$@"; }

if [[ $mode == --cpu-small ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  run "$bin/00_tensors_and_views" --device cpu --out-dir "$out/00"
  for dtype in f32 bf16 f16; do
    run "$bin/01_matmul_add" --device cpu --size 17 --dtype "$dtype" --out-dir "$out/01"
  done
  run "$bin/01_matmul_add" --device cpu --size 8 --batched --warmup 1 --out-dir "$out/01"
  run "$bin/01_matmul_add" --device cpu --size 8 --fused --schedule-wait 0 --schedule-warmup 0 --out-dir "$out/01"
  run "$bin/02_linear" --device cpu --tokens 33 --in 7 --out 5 --out-dir "$out/02"
  run "$bin/02_linear" --device cpu --tokens 33 --in 7 --out 5 --fused --dtype f32 --out-dir "$out/02"
  for path in eager fused merged epilogue; do
    run "$bin/03_mlp" --device cpu --batch 2 --seq 5 --dim 16 --hidden 24 --path "$path" --out-dir "$out/03"
  done
  for path in naive inplace math flash_v1 flash_v2 flash_v3; do
    run "$bin/04_attention" --device cpu --batch 1 --heads 2 --seq 9 --head-dim 8 --path "$path" --out-dir "$out/04"
  done
  run "$bin/04_attention" --device cpu --batch 2 --heads 1 --seq 5 --head-dim 4 --no-causal --dtype f32 --out-dir "$out/04"
  run "$bin/05_memory_and_syncs" --device cpu --batch 2 --seq 8 --dim 64 --hidden 96 --timing-rows 16 --out-dir "$out/05"
  run "$bin/06_cuda_graphs" --device cpu --size 17 --out-dir "$out/06"
  run "$bin/06_cuda_graphs" --device cpu --workload mlp --batch 1 --mode graph --out-dir "$out/06"
  exit 0
elif [[ -n $mode ]]; then
  echo "run_all.sh: unknown option '$mode' (expected --cpu-small or nothing)" >&2
  exit 2
fi

# The series' runs, in order; each is announced with its place in the list before it starts.
runs=(
  "00_tensors_and_views"
  # Part 1 at the series' two sizes: overhead-bound (64) and compute-bound (4096).
  # Artifacts: traces/01_matmul_add/<size>_<dtype>_<cold|warm>_<eager|fused>.{json,txt}
  "01_matmul_add --size 64"
  "01_matmul_add --size 4096"
  # Part 2: one Linear (eager, then with the weight pre-transposed), then the GeGLU MLP's paths.
  # Artifacts: traces/02_linear/..., traces/03_mlp/...
  "02_linear"
  "02_linear --fused"
  "03_mlp --path eager"
  "03_mlp --path fused"
  "03_mlp --path merged"
  "03_mlp --path epilogue"  # 2 kernels on Hopper; elsewhere linear_geglu's composite, and it says so
  # Part 3: attention, six paths at the series' shape (B4 H16 S1024 D64 bf16, causal). On a CPU the
  # fused paths say why they cannot run and run the math path instead; on a GPU without a fused
  # rung's instructions (flash_v2 needs compute capability 8.0, flash_v3 9.0) they say why and run
  # the best fused rung the GPU has.
  # Artifacts: traces/04_attention/4x16x1024x64_bf16_cold_<path>.{json,txt}
  "04_attention --path naive"
  "04_attention --path inplace"
  "04_attention --path math"
  "04_attention --path flash_v1"
  "04_attention --path flash_v2"
  "04_attention --path flash_v3"
  # Beyond the series: memory (profile_memory, the caching allocator), hidden syncs, timing one kernel.
  # Artifacts: traces/05_memory_and_syncs/...; draw a memory timeline with ts_trace_svg --memory.
  "05_memory_and_syncs --warmup 5"
  # CUDA graphs: each workload eager, then replayed from a graph (on a CPU the eager half runs and the
  # graph half says why it cannot). Artifacts: traces/06_cuda_graphs/<config>_<eager|graph>.{json,txt}
  "06_cuda_graphs --size 64 --warmup 5"
  "06_cuda_graphs --size 4096 --warmup 5"
  "06_cuda_graphs --workload mlp --warmup 5"
  "06_cuda_graphs --workload attention --warmup 5"
)
for i in "${!runs[@]}"; do
  read -r -a args <<<"${runs[$i]}"
  echo
  echo "== tutorial run $((i + 1)) of ${#runs[@]}: ${runs[$i]}"
  run "$bin/${args[0]}" "${args[@]:1}"
done
echo
echo "== all ${#runs[@]} tutorial runs passed; their tables and traces are in traces/ (ts_trace_svg draws them)"
