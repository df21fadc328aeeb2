#!/usr/bin/env bash
# tools/render_pictures.sh [SVG_TOOL] [ROOT]: draws every picture of the walk-throughs and the README
# from its committed trace, into the pictures/ folder beside that trace.
#
#   tools/render_pictures.sh                                  # build/dev/ts_trace_svg, into this checkout
#   tools/render_pictures.sh build/dev/ts_trace_svg /tmp/pics # the test: /tmp/pics/docs/... must equal the
#                                                             # committed pictures byte for byte
#
# The pictures are committed so that they show on the repository's web pages; this list is the only
# place that says which trace and which options make each one (docs/h200-runs/<tutorial>/pictures/),
# and ctest (render_pictures) fails when a committed picture differs from what its trace gives, or
# when a pictures/ folder of the walk-throughs holds one this list does not make. Edit the list, run
# the script, commit both. Each picture is written with -o, and the tool prints one "wrote" line.
# Tutorial 05's pictures are its refresh script's (tools/refresh_05_memory_and_syncs.sh), the ladder's
# rooflines tools/ladder_roofline.py's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=$(realpath "${1:-$root/build/dev/ts_trace_svg}")
out=${2:-$root}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"  # trace paths relative to the checkout: the pictures' titles do not depend on where it is

draw() {  # draw TUTORIAL PICTURE TRACE [OPTIONS...]: TRACE and the picture in docs/h200-runs/TUTORIAL/
  local dir=docs/h200-runs/$1 picture=$2 trace=$3
  shift 3
  mkdir -p "$out/$dir/pictures"
  "$tool" "$dir/$trace" "$@" -o "$out/$dir/pictures/$picture"
}

# 00: t() and select() launch nothing; contiguous() and add launch one kernel each (after CUDA's start).
draw 00_tensors_and_views views_cuda_after_start.svg views_cuda.json --from-us 3800 --to-us 6600
# 01: the cold step (ProfilerStep#0 of --schedule-wait 0 --schedule-warmup 0), the whole window...
draw 01_matmul_add 64_bf16_cold_eager_wait0_warmup0.svg 64_bf16_cold_eager_wait0_warmup0.json
# ...and its first 6 ms: CUPTI's buffer request, the library's first calls.
draw 01_matmul_add 64_bf16_cold_eager_wait0_warmup0_first6ms.svg 64_bf16_cold_eager_wait0_warmup0.json --to-us 6000
# 01: the whole window of a cold run at 64 and at 4096, ending in the profiler's cudaDeviceSynchronize
# and its Context Sync (reading_a_trace.md).
draw 01_matmul_add 64_bf16_cold_eager.svg 64_bf16_cold_eager.json
draw 01_matmul_add 4096_bf16_cold_eager.svg 4096_bf16_cold_eager.json
# 01 with 16 KiB CUPTI buffers: the step in which CUPTI flushed a full buffer and asked for the next.
draw 01_matmul_add_refill 64_bf16_warm_eager_step30.svg 64_bf16_warm_eager.json --step 30
# 01: overhead-bound (64) and compute-bound (4096), one step each; 64 also on a 32 us scale, with the
# same step recorded without CUPTI (--activities cpu) on the same scale.
draw 01_matmul_add 64_bf16_warm_eager_step3.svg 64_bf16_warm_eager.json --step 3
draw 01_matmul_add 64_bf16_warm_eager_step4.svg 64_bf16_warm_eager.json --step 4 --to-us 32
draw 01_matmul_add 64_bf16_warm_eager_cpu_activity_step4.svg 64_bf16_warm_eager_cpu_activity.json --step 4 --to-us 32
draw 01_matmul_add 4096_bf16_warm_eager_step3.svg 4096_bf16_warm_eager.json --step 3
# 01: addmm with the series' [N, N] C: one GEMM kernel, no copy.
draw 01_matmul_add 4096_bf16_warm_fused_matrix_step3.svg 4096_bf16_warm_fused_matrix.json --step 3
# 02: one Linear; and a shape where cuBLASLt splits the GEMM in two kernels.
draw 02_linear 1024x32x64_bf16_warm_eager_step3.svg 1024x32x64_bf16_warm_eager.json --step 3
draw 02_linear 33x129x65_bf16_warm_eager_step3.svg 33x129x65_bf16_warm_eager.json --step 3
# 03: eager, fused and merged MLP, step #3 each, on one time scale (the eager step ends by 380 us).
for path in eager fused merged; do
  draw 03_mlp "64x128x768x3072_bf16_warm_${path}_step3.svg" "64x128x768x3072_bf16_warm_${path}.json" --step 3 --to-us 380
done
# 04: the naive path's five kernels and its Memcpy DtoD, and the in-place path without the copy, one step
# each on one scale (the naive step ends by 760 us); the math path's step, whole (the CPU done long before
# the GPU) and its GPU work alone (twelve kernels); flash_v2's one kernel.
for path in naive inplace; do
  draw 04_attention "4x16x1024x64_bf16_warm_${path}_step3.svg" "traces/4x16x1024x64_bf16_warm_${path}.json" --step 3 --to-us 760
done
draw 04_attention 4x16x1024x64_bf16_warm_math_step3.svg traces/4x16x1024x64_bf16_warm_math.json --step 3
draw 04_attention 4x16x1024x64_bf16_warm_math_step3_gpu.svg traces/4x16x1024x64_bf16_warm_math.json --step 3 \
  --from-us 985 --to-us 1920
draw 04_attention 4x16x1024x64_bf16_warm_flash_v2_step3.svg traces/4x16x1024x64_bf16_warm_flash_v2.json --step 3
# 06: part 1's step at 64, eager and replayed from a CUDA graph, step #3 each on one scale (the eager
# step's GPU work ends by 25 us): two launches under the ops, or one cudaGraphLaunch with an arrow to each kernel.
for mode in eager graph; do
  draw 06_cuda_graphs "64_bf16_warm_step_${mode}_step3.svg" "traces/64_bf16_warm_step_${mode}.json" --step 3 --to-us 26
done
