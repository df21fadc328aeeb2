#!/usr/bin/env bash
# tools/render_pictures.sh [SVG_TOOL] [OUT_DIR]: draws every picture of the walk-throughs from its committed trace.
#
#   tools/render_pictures.sh                                  # build/dev/ts_trace_svg into docs/pictures/
#   tools/render_pictures.sh build/dev/ts_trace_svg /tmp/pics # the test: must equal docs/pictures/ byte for byte
#
# The pictures are committed so that they show on the repository's web pages;
# this list is the only place that says which trace and which options make
# each one, and ctest (render_pictures) fails when a committed picture differs
# from what its trace gives. Edit the list, run the script, commit both.
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
