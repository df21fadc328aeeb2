#!/usr/bin/env bash
# tools/profiler_cuda_check.sh BUILD OUT_DIR: the profiler's CUDA side on a GPU machine (make gpu-check runs it).
#
#   1. ts_tests -tc='profiler cuda*': kernel counts, attribution, flows, clock order,
#      100,000 launches, 1,000 start/stop cycles, exit with a profile open, the CUPTI fallback
#   2. tutorial 01 on cuda at sizes 64 and 4096 (eager and fused at 64); every trace through
#      ts_trace_check; tables and traces copied to OUT_DIR/tutorial01/
#   3. ts_bench's cuda/raw_launch, cuda/raw_launch_cupti and profiler/cuda/add_1elem_profiled
#   4. HTA on the size-64 trace when HTA can be imported here (python3 tools/hta_check.py --gpu-trace)
# Prints one PASS/FAIL line per step; exit status 0 when all passed.
set -uo pipefail
BUILD=${1:?usage: profiler_cuda_check.sh BUILD OUT_DIR}
OUT=${2:?usage: profiler_cuda_check.sh BUILD OUT_DIR}
mkdir -p "$OUT/tutorial01"
BUILD=$(cd "$BUILD" && pwd)
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
failed=0
step() {  # step NAME STATUS
  printf '%-28s %s\n' "$1" "$( (($2 == 0)) && echo PASS || echo FAIL)"
  (($2 == 0)) || failed=1
}

"$BUILD/ts_tests" -tc='profiler cuda*' >"$OUT/profiler_cuda_tests.log" 2>&1
step "profiler cuda tests" $?
grep -a -E '\[doctest\] (test cases|assertions)' "$OUT/profiler_cuda_tests.log"
grep -a -B2 -A12 'ERROR:' "$OUT/profiler_cuda_tests.log" | head -60

work=$(mktemp -d)
for args in "--size 64" "--size 64 --fused" "--size 4096"; do
  (cd "$work" && "$BUILD/tutorials/01_matmul_add" --device cuda --dtype bf16 $args --out-dir "$work/traces") \
    >"$work/run.txt" 2>&1
  rc=$?
  name=$(echo "$args" | tr -d ' -')
  cp "$work/run.txt" "$OUT/tutorial01/$name.stdout.txt"
  step "tutorial 01 $args" $rc
  if [[ $args == "--size 4096" || $rc != 0 ]]; then cat "$work/run.txt"; fi
done
for json in "$work"/traces/*.json; do
  "$BUILD/ts_trace_check" "$json" --steps 3 >"$json.check.txt" 2>&1
  rc=$?  # read before the step line: its $(basename) would reset $?
  step "ts_trace_check $(basename "$json")" $rc
  tail -n 8 "$json.check.txt"
done
cp "$work"/traces/* "$OUT/tutorial01/"
rm -rf "$work"

"$BUILD/ts_bench" --filter raw_launch >"$OUT/profiler_bench.txt" 2>&1
rc1=$?
"$BUILD/ts_bench" --filter profiler/cuda >>"$OUT/profiler_bench.txt" 2>&1
step "ts_bench profiler entries" $((rc1 | $?))
cat "$OUT/profiler_bench.txt"

if python3 -c 'import hta' >/dev/null 2>&1; then
  python3 tools/hta_check.py --gpu-trace "$OUT/tutorial01/64_bf16_cold_eager.json" >"$OUT/hta_gpu.log" 2>&1
  step "HTA kernel breakdown" $?
  cat "$OUT/hta_gpu.log"
else
  echo "HTA kernel breakdown         SKIP (no hta module here; run tools/hta_check.py --gpu-trace on the copied trace)"
fi
exit "$failed"
