#!/usr/bin/env bash
# tools/render_pictures.sh [SVG_TOOL] [OUT_DIR]: draws every picture of the walk-throughs from its committed trace.
#
#   tools/render_pictures.sh                                  # build/dev/ts_trace_svg into docs/pictures/
#   tools/render_pictures.sh build/dev/ts_trace_svg /tmp/pics # the test: must equal docs/pictures/ byte for byte
#
# The pictures are committed so that they show on the repository's web pages;
# this list is the only place that says which trace and which options make
# each one, and ctest (render_pictures) fails when a committed picture differs
# from what its trace gives. Edit the list, run the script, commit both. Each
# picture is written with -o into OUT_DIR, and the tool prints one "wrote" line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=$(realpath "${1:-$root/build/dev/ts_trace_svg}")
out=${2:-$root/docs/pictures}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"  # trace paths relative to the checkout: the pictures' titles do not depend on where it is
traces=docs/h200-runs/traces

draw() {  # draw PICTURE TRACE [OPTIONS...]
  local picture=$1 trace=$2
  shift 2
  "$tool" "$traces/$trace" "$@" -o "$out/$picture"
}

# Tutorial 01, section 3: overhead-bound (64) against compute-bound (4096), step #3 of the excerpts.
draw 01_matmul_add-64_bf16_warm_eager-step3.svg 01_matmul_add/64_bf16_warm_eager.json --step 3
draw 01_matmul_add-4096_bf16_cold_eager-step3.svg 01_matmul_add/4096_bf16_cold_eager.json --step 3
# Tutorial 01, section 8: the whole window, ending in the long cudaDeviceSynchronize and its Context Sync.
draw 01_profiler_check-4096_bf16_cold_eager.svg 01_profiler_check/4096_bf16_cold_eager.json
# The same window at 64 (reading_a_trace.md): the GPU mostly idle, the sync short.
draw 01_profiler_check-64_bf16_cold_eager.svg 01_profiler_check/64_bf16_cold_eager.json
# Tutorial 03: eager, fused and merged MLP, step #3 each, on one time scale (0 to 560 us).
for path in eager fused merged; do
  draw "03_mlp-64x128x768x3072_bf16_warm_${path}-step3.svg" "03_mlp/64x128x768x3072_bf16_warm_${path}.json" \
    --step 3 --to-us 560
done

# The walk-throughs of tutorials 00-03, from the traces of tools/refresh_walkthroughs.sh --device cuda.
walk() {  # walk PICTURE TRACE [OPTIONS...]: TRACE under docs/h200-runs
  local picture=$1 trace=$2
  shift 2
  "$tool" "docs/h200-runs/$trace" "$@" -o "$out/$picture"
}
# 00: t() and select() launch nothing; contiguous() and add launch one kernel each (after CUDA's start).
walk 00_walkthrough-views_cuda.svg 00_tensors_and_views/views_cuda.json --from-us 136290 --to-us 138010
# 01: the cold step (ProfilerStep#0 of --schedule-wait 0 --schedule-warmup 0), the whole window.
walk 01_walkthrough-64_bf16_cold_eager_wait0_warmup0.svg 01_matmul_add/64_bf16_cold_eager_wait0_warmup0.json
# ...and its first 4 ms: CUPTI's buffer request, the library's first calls, the workspace allocation.
walk 01_walkthrough-64_bf16_cold_eager_wait0_warmup0-first4ms.svg 01_matmul_add/64_bf16_cold_eager_wait0_warmup0.json \
  --to-us 4000
# 01: overhead-bound (64) and compute-bound (4096), one step each.
walk 01_walkthrough-64_bf16_warm_eager-step4.svg 01_matmul_add/64_bf16_warm_eager.json --step 4 --to-us 21
walk 01_walkthrough-4096_bf16_warm_eager-step3.svg 01_matmul_add/4096_bf16_warm_eager.json --step 3
# 01: the same step recorded without CUPTI (--activities cpu), on the scale of the one above it.
walk 01_walkthrough-64_bf16_warm_eager_cpu_activity-step4.svg 01_matmul_add/64_bf16_warm_eager_cpu_activity.json \
  --step 4 --to-us 21
# 01: addmm with the series' [N, N] C: one GEMM kernel, no copy.
walk 01_walkthrough-4096_bf16_warm_fused_matrix-step3.svg 01_matmul_add/4096_bf16_warm_fused_matrix.json --step 3
# 02: one Linear; and a shape where cuBLASLt splits the GEMM in two kernels.
walk 02_walkthrough-1024x32x64_bf16_warm_eager-step3.svg 02_linear/1024x32x64_bf16_warm_eager.json --step 3
walk 02_walkthrough-33x129x65_bf16_warm_eager-step3.svg 02_linear/33x129x65_bf16_warm_eager.json --step 3
# 03: eager, fused and merged MLP, step #3 each, on one time scale.
for path in eager fused merged; do
  walk "03_walkthrough-64x128x768x3072_bf16_warm_${path}-step3.svg" "03_mlp/64x128x768x3072_bf16_warm_${path}.json" \
    --step 3 --to-us 450
done
