#!/usr/bin/env bash
# tools/gpu_check.sh OUT_DIR: the H200 test loop, one command (make gpu-check OUT=dir).
#
#   1. configure build/gpu for sm_90 (installing packages only if configure fails)
#   2. build with -j16
#   3. run the GPU suites (ts_tests -tc='cuda*'), again with TS_LAUNCH_BLOCKING=1, then the rest;
#      then the CUDA fuzzer (ts_hardening_tests -tc='cuda fuzz*'): random strided views through
#      every CUDA op against the CPU
#   4. run the GPU suites again under compute-sanitizer: memcheck (with the cache
#      off, so an access past a tensor's end is caught), racecheck, synccheck
#   5. run ts_bench's GPU entries, then PyTorch on the same workloads
#   6. print a summary table last (also OUT_DIR/summary.txt)
#
# Logs: OUT_DIR/{build,tests,cuda_fuzz,memcheck,racecheck,synccheck}.log, bench.txt,
# bench.jsonl, summary.txt. Exit status: 0 when every step passed.
# Variables: BUILD (build/gpu), JOBS (16), ARCHS (90), SANITIZER_TIMEOUT (150 s per tool),
# TS_CUDA_FUZZ_SEED (2024) and TS_CUDA_FUZZ_CASES (3000) for the fuzzer.
set -uo pipefail

OUT=${1:-gpu-check-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/gpu}
JOBS=${JOBS:-16}
ARCHS=${ARCHS:-90}
SANITIZER_TIMEOUT=${SANITIZER_TIMEOUT:-400}  # racecheck needs ~150 s on the H200
NVCC=/usr/local/cuda/bin/nvcc
[[ -x $NVCC ]] || NVCC=$(command -v nvcc || echo nvcc)
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

rows=()
failed=0
t_start=$(date +%s)

# row STEP STATUS SECONDS DETAIL
row() {
  rows+=("$(printf '%-12s %-8s %6ss  %s' "$1" "$2" "$3" "$4")")
  [[ $2 == PASS || $2 == SKIP ]] || failed=1
}

# timed LOG CMD...: runs CMD with output to OUT/LOG; sets rc and secs.
timed() {
  local log=$1
  shift
  local t0=$(date +%s)
  "$@" >>"$OUT/$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
}

# ---- 1+2. configure and build -----------------------------------------------------------
: >"$OUT/build.log"
configure() {
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_FLAGS=-lineinfo
}
timed build.log configure
if ((rc != 0)); then  # only now try the package installer (the H200 image has everything under other names)
  echo "== configure failed; trying tools/install_deps.sh" >>"$OUT/build.log"
  timed build.log bash tools/install_deps.sh
  timed build.log configure
fi
if ((rc == 0)); then
  timed build.log cmake --build "$BUILD" -j"$JOBS"
fi
if ((rc != 0)); then
  row build FAIL "$secs" "see build.log: $(grep -m1 -E 'error|Error' "$OUT/build.log" | cut -c1-100)"
  printf '%s\n' "${rows[@]}" | tee "$OUT/summary.txt"
  tail -n 40 "$OUT/build.log"
  exit 1
fi
row build PASS "$secs" "$BUILD, sm_$ARCHS, $("$NVCC" --version | grep -o 'release [0-9.]*')"

# ---- 3. the test suite: GPU suites (cuda*), then the rest ---------------------------------------
doctest_summary() {  # "cases: N | N passed | M failed ... | assertions: ..." from a doctest log
  local cases asserts
  cases=$(grep -a '\[doctest\] test cases:' "$1" | tail -n1 | sed 's/.*test cases://' | tr -s ' ')
  asserts=$(grep -a '\[doctest\] assertions:' "$1" | tail -n1 | sed 's/.*assertions://' | tr -s ' ')
  echo "cases:${cases:- none} | assertions:${asserts:- none}"
}
: >"$OUT/tests.log"
echo "== ts_tests -tc='cuda*' (the GPU suites)" >>"$OUT/tests.log"
timed tests.log "$BUILD/ts_tests" -tc='cuda*'
cp "$OUT/tests.log" "$OUT/.gpu_tests.log"
row gpu-tests "$([[ $rc == 0 ]] && echo PASS || echo FAIL)" "$secs" "$(doctest_summary "$OUT/.gpu_tests.log")"
rm -f "$OUT/.gpu_tests.log"
echo "== TS_LAUNCH_BLOCKING=1 TS_GPU_TEST_QUICK=1 ts_tests -tc='cuda*' (synchronize and check after every op)" >>"$OUT/tests.log"
timed tests.log env TS_LAUNCH_BLOCKING=1 TS_GPU_TEST_QUICK=1 "$BUILD/ts_tests" -tc='cuda*'
row blocking "$([[ $rc == 0 ]] && echo PASS || echo FAIL)" "$secs" "TS_LAUNCH_BLOCKING=1, every other case"
echo "== ts_tests -tce='cuda*' (everything else)" >>"$OUT/tests.log"
timed tests.log "$BUILD/ts_tests" -tce='cuda*'
row other-tests "$([[ $rc == 0 ]] && echo PASS || echo FAIL)" "$secs" "$(doctest_summary "$OUT/tests.log")"

# ---- 3b. the CUDA fuzzer: random strided views through every CUDA op, against the CPU -----------
# tests/test_cuda_fuzz.cpp: seeded cases (TS_CUDA_FUZZ_SEED, TS_CUDA_FUZZ_CASES), synchronized
# after every op so that a fault is pinned on the op that made it. Each failing case is printed
# in cuda_fuzz.log with its inputs (dtype, shape, strides, offset), the op, the rung it preferred,
# the first differing element and the command that replays it alone; the summary names the first.
: >"$OUT/cuda_fuzz.log"
timed cuda_fuzz.log env TS_LAUNCH_BLOCKING=1 "$BUILD/ts_hardening_tests" -tc='cuda fuzz*'
fuzz_summary=$(grep -a -m1 -o 'cuda fuzz: seed [0-9]*, cases [0-9.]* on cuda[^;]*; [^;]*' "$OUT/cuda_fuzz.log")
fuzz_status=$([[ $rc == 0 ]] && echo PASS || echo FAIL)
if grep -a -q 'skipped: no usable CUDA device' "$OUT/cuda_fuzz.log"; then
  fuzz_status=SKIP
  fuzz_summary="skipped: $(grep -a -m1 -o 'no usable CUDA device.*' "$OUT/cuda_fuzz.log" | cut -c1-80)"
elif [[ $fuzz_status == FAIL ]]; then
  first=$(grep -a -m1 -o 'seed [0-9]* case [0-9]* (replay: [^)]*)' "$OUT/cuda_fuzz.log")
  fuzz_summary="${fuzz_summary:-no fuzz summary (exit $rc)}; first failure: ${first:-see cuda_fuzz.log}"
fi
row cuda-fuzz "$fuzz_status" "$secs" "${fuzz_summary:-no fuzz summary} (cuda_fuzz.log) | $(doctest_summary "$OUT/cuda_fuzz.log")"

# ---- 4. compute-sanitizer on the GPU suites ------------------------------------------------
# Every other case of each sweep (TS_GPU_TEST_QUICK=1) keeps each tool under its timeout
# while still launching every kernel; the out-of-memory case and the failed-launch
# case are left out (a failed cudaMalloc or launch is, to the sanitizer, an API error).
sanitize() {
  local tool=$1
  shift
  : >"$OUT/$tool.log"
  if [[ ! -x $SANITIZER ]]; then
    row "$tool" SKIP 0 "compute-sanitizer not found"
    return
  fi
  timed "$tool.log" env TS_GPU_TEST_QUICK=1 "$@" timeout "$SANITIZER_TIMEOUT" "$SANITIZER" --tool "$tool" \
    --error-exitcode 99 --print-limit 20 "$BUILD/ts_tests" -tc='cuda*' -tce='*out of memory*,*failed launch*'
  local summary
  summary=$(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -n1 | sed 's/=* *//')
  local status=PASS
  if ((rc == 124)); then
    status=TIMEOUT
    summary="stopped after ${SANITIZER_TIMEOUT}s"
  elif ((rc != 0)); then
    status=FAIL
  fi
  row "$tool" "$status" "$secs" "${summary:-no summary} | $(doctest_summary "$OUT/$tool.log")"
}
sanitize memcheck TS_CUDA_NO_CACHING=1
sanitize racecheck
sanitize synccheck

# ---- 5. benchmarks ------------------------------------------------------------------------------
: >"$OUT/bench.txt"
rm -f "$OUT/bench.jsonl"
timed bench.txt "$BUILD/ts_bench" --gpu --json "$OUT/bench.jsonl"
row bench "$([[ $rc == 0 ]] && echo PASS || echo FAIL)" "$secs" "ts_bench --gpu (bench.txt)"
if python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1 && [[ -s $OUT/bench.jsonl ]]; then
  echo >>"$OUT/bench.txt"
  timed bench.txt python3 bench/torch_side_by_side.py --ts-json "$OUT/bench.jsonl"
  row torch "$([[ $rc == 0 ]] && echo PASS || echo FAIL)" "$secs" "bench/torch_side_by_side.py (bench.txt)"
else
  row torch SKIP 0 "no PyTorch with CUDA here"
fi

# ---- 5b. the profiler's CUDA side (CUPTI) --------------------------------------------------
# tools/profiler_cuda_check.sh: profiler cuda tests, tutorial 01 on cuda (64, 64 fused, 4096)
# with ts_trace_check, the profiler bench entries, HTA when importable. Log: profiler_cuda.log.
: >"$OUT/profiler_cuda.log"
timed profiler_cuda.log bash tools/profiler_cuda_check.sh "$BUILD" "$OUT/profiler_cuda"
row profiler-cuda "$([[ $rc == 0 ]] && echo PASS || echo FAIL)" "$secs" \
  "tools/profiler_cuda_check.sh (profiler_cuda.log, profiler_cuda/)"

# ---- 6. summary, last -----------------------------------------------------------------------------
{
  echo
  echo "== ts_bench and PyTorch (from bench.txt)"
  grep -v '^$' "$OUT/bench.txt" | grep -v -E '^(entry|-)' | sed 's/^/  /'
  echo
  echo "== make gpu-check summary ($(($(date +%s) - t_start)) s; logs in $OUT)"
  printf '%-12s %-8s %7s  %s\n' step status time detail
  printf '%s\n' "${rows[@]}"
} | tee "$OUT/summary.txt"
exit "$failed"
