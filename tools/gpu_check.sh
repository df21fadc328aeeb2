#!/usr/bin/env bash
# tools/gpu_check.sh OUT_DIR [STEP ...]: the GPU test loop (make gpu-check OUT=dir [STEPS="..."]).
#
# Each step finishes in a few minutes on an H200, so that steps fit one at a time where a command
# may run ten minutes at most; with no STEP, all of them run, in this order:
#
#   build        configure BUILD (build/gpu) for ARCHS (default: the portable set, what a fresh
#                clone builds where no GPU is visible; its sm_90 machine code is what an H200 runs)
#                and build it with JOBS (16) jobs
#   tests        the GPU suites (ts_tests -tc='cuda*,profiler cuda*'), again with TS_LAUNCH_BLOCKING=1
#                on every other case, then everything else
#   fuzz         the CUDA fuzzer: random strided views through every CUDA op against the CPU
#   memcheck     the GPU suites under compute-sanitizer's memcheck (the caching allocator off, so that
#   racecheck    an access past a tensor's end is caught), racecheck and synccheck, each on the quick
#   synccheck    sweep that launches every kernel once (TS_GPU_TEST_QUICK=once; SWEEP=1 for every
#                other case, SWEEP=0 for all of them)
#   bench        ts_bench --gpu, then PyTorch on the same workloads (bench/torch_side_by_side.py)
#   profiler     tools/profiler_cuda_check.sh: the profiler's CUDA side, tutorial 01's traces
#   emulate-8.0  the GPU suites and every tutorial with TS_DEVICE_CAPABILITY=8.0 and 7.5: the rungs
#   emulate-7.5  an A100 or a T4 would choose, on this GPU (its own machine code still runs)
#   ptx          a build of compute_80 PTX alone (build/gpu-ptx80), which the driver compiles for this
#                GPU at load, and the GPU suites on it
#   no-code      a build of sm_80 machine code alone (build/gpu-sm80): on a GPU it cannot run, the
#                first CUDA op must stop with the message that names the GPU, the build's
#                architectures and the command that rebuilds for it
#
# Every step appends its row to OUT_DIR/summary.txt (step, status, seconds, detail) and its log to
# OUT_DIR/<step>.log; the rows so far are printed last. Exit status 0 when every step run passed.
# Variables: BUILD (build/gpu), ARCHS (portable), JOBS (16), SWEEP (once), SANITIZER_TIMEOUT (560 s
# per tool), TS_CUDA_FUZZ_SEED (2024) and TS_CUDA_FUZZ_CASES (3000).
set -uo pipefail

OUT=${1:-gpu-check-out}
shift || true
steps=("$@")
all_steps=(build tests fuzz memcheck racecheck synccheck bench profiler emulate-8.0 emulate-7.5 ptx no-code)
((${#steps[@]})) || steps=("${all_steps[@]}")
for s in "${steps[@]}"; do
  [[ " ${all_steps[*]} " == *" $s "* ]] || { echo "gpu_check.sh: unknown step '$s' (steps: ${all_steps[*]})" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BUILD:-build/gpu}
ARCHS=${ARCHS:-portable}
JOBS=${JOBS:-16}
SWEEP=${SWEEP:-once}
SANITIZER_TIMEOUT=${SANITIZER_TIMEOUT:-560}
NVCC=/usr/local/cuda/bin/nvcc
[[ -x $NVCC ]] || NVCC=$(command -v nvcc || echo nvcc)
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
GPU_SUITES='cuda*,profiler cuda*'

failed=0
# row STEP STATUS SECONDS DETAIL: one line of the summary.
row() {
  printf '%-12s %-8s %6ss  %s\n' "$1" "$2" "$3" "$4" >>"$OUT/summary.txt"
  [[ $2 == PASS || $2 == SKIP ]] || failed=1
}
status_of() { (($1 == 0)) && echo PASS || echo FAIL; }

# timed LOG CMD...: runs CMD with its output appended to OUT/LOG; sets rc and secs.
timed() {
  local log=$1
  shift
  local t0
  t0=$(date +%s)
  "$@" >>"$OUT/$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
}

doctest_summary() {  # "cases: ... | assertions: ..." of the last doctest run in a log
  local cases asserts
  cases=$(grep -a '\[doctest\] test cases:' "$1" | tail -n1 | sed 's/.*test cases://' | tr -s ' ')
  asserts=$(grep -a '\[doctest\] assertions:' "$1" | tail -n1 | sed 's/.*assertions://' | tr -s ' ')
  echo "cases:${cases:- none} | assertions:${asserts:- none}"
}

# configure_and_build LOG DIR ARCHS [TARGET...]: a Release build with -lineinfo (compute-sanitizer
# and ncu name source lines), installing packages only if the first configure fails.
configure_and_build() {
  local log=$1 dir=$2 archs=$3
  shift 3
  local configure=(cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs"
                   -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_FLAGS=-lineinfo)
  local t0
  t0=$(date +%s)
  if ! "${configure[@]}" >>"$OUT/$log" 2>&1; then
    echo "== configure failed; trying tools/install_deps.sh" >>"$OUT/$log"
    bash tools/install_deps.sh >>"$OUT/$log" 2>&1
    "${configure[@]}" >>"$OUT/$log" 2>&1 || { rc=1; secs=$(($(date +%s) - t0)); return; }
  fi
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$dir" -j"$JOBS" "${targets[@]}" >>"$OUT/$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
}

need_build() {  # a step that runs binaries of BUILD
  [[ -x $BUILD/ts_tests ]] && return 0
  row "$1" FAIL 0 "no $BUILD/ts_tests: run the build step first"
  return 1
}

# ---- the steps ------------------------------------------------------------------------------------
step_build() {
  : >"$OUT/build.log"
  configure_and_build build.log "$BUILD" "$ARCHS"
  local archs
  archs=$(grep -a -m1 -o 'architectures [^ ]*' "$OUT/build.log" | cut -d' ' -f2)
  if ((rc != 0)); then
    row build FAIL "$secs" "see build.log: $(grep -a -m1 -E 'error|Error' "$OUT/build.log" | cut -c1-100)"
  else
    row build PASS "$secs" "$BUILD, $archs, $("$NVCC" --version | grep -o 'release [0-9.]*'), -j$JOBS"
  fi
}

step_tests() {
  need_build tests || return
  : >"$OUT/tests.log"
  echo "== ts_tests -tc='$GPU_SUITES' (the GPU suites)" >>"$OUT/tests.log"
  timed tests.log "$BUILD/ts_tests" -tc="$GPU_SUITES"
  cp "$OUT/tests.log" "$OUT/.gpu_tests.log"
  row gpu-tests "$(status_of $rc)" "$secs" "$(doctest_summary "$OUT/.gpu_tests.log")"
  rm -f "$OUT/.gpu_tests.log"
  echo "== TS_LAUNCH_BLOCKING=1 TS_GPU_TEST_QUICK=1 ts_tests -tc='cuda*' (synchronize and check after every op)" \
    >>"$OUT/tests.log"
  timed tests.log env TS_LAUNCH_BLOCKING=1 TS_GPU_TEST_QUICK=1 "$BUILD/ts_tests" -tc='cuda*'
  row blocking "$(status_of $rc)" "$secs" "TS_LAUNCH_BLOCKING=1, every other case"
  echo "== ts_tests -tce='$GPU_SUITES' (everything else)" >>"$OUT/tests.log"
  timed tests.log "$BUILD/ts_tests" -tce="$GPU_SUITES"
  row other-tests "$(status_of $rc)" "$secs" "$(doctest_summary "$OUT/tests.log")"
}

# tests/test_cuda_fuzz.cpp: seeded cases, synchronized after every op so that a fault is pinned on
# the op that made it; each failing case is logged with its inputs and the command that replays it.
step_fuzz() {
  need_build fuzz || return
  : >"$OUT/fuzz.log"
  timed fuzz.log env TS_LAUNCH_BLOCKING=1 "$BUILD/ts_hardening_tests" -tc='cuda fuzz*'
  local summary status
  summary=$(grep -a -m1 -o 'cuda fuzz: seed [0-9]*, cases [0-9.]* on cuda[^;]*; [^;]*' "$OUT/fuzz.log")
  status=$(status_of $rc)
  if [[ $status == FAIL ]]; then
    summary="${summary:-no fuzz summary (exit $rc)}; first failure: $(grep -a -m1 -o 'seed [0-9]* case [0-9]* (replay: [^)]*)' "$OUT/fuzz.log")"
  fi
  row fuzz "$status" "$secs" "${summary:-no fuzz summary} | $(doctest_summary "$OUT/fuzz.log")"
}

# The out-of-memory case and the failed-launch case are left out: a failed cudaMalloc or launch is,
# to the sanitizer, an API error.
sanitize() {
  local tool=$1
  shift
  need_build "$tool" || return
  : >"$OUT/$tool.log"
  if [[ ! -x $SANITIZER ]]; then
    row "$tool" SKIP 0 "compute-sanitizer not found"
    return
  fi
  timed "$tool.log" env TS_GPU_TEST_QUICK="$SWEEP" "$@" timeout "$SANITIZER_TIMEOUT" "$SANITIZER" --tool "$tool" \
    --error-exitcode 99 --print-limit 20 "$BUILD/ts_tests" -tc='cuda*' -tce='*out of memory*,*failed launch*'
  local summary status=PASS
  summary=$(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -n1 | sed 's/=* *//')
  if ((rc == 124)); then
    status=TIMEOUT
    summary="stopped after ${SANITIZER_TIMEOUT}s"
  elif ((rc != 0)); then
    status=FAIL
  fi
  row "$tool" "$status" "$secs" "${summary:-no summary} | TS_GPU_TEST_QUICK=$SWEEP | $(doctest_summary "$OUT/$tool.log")"
}
step_memcheck() { sanitize memcheck TS_CUDA_NO_CACHING=1; }
step_racecheck() { sanitize racecheck; }
step_synccheck() { sanitize synccheck; }

step_bench() {
  need_build bench || return
  : >"$OUT/bench.log"
  rm -f "$OUT/bench.jsonl"
  timed bench.log "$BUILD/ts_bench" --gpu --json "$OUT/bench.jsonl"
  row bench "$(status_of $rc)" "$secs" "ts_bench --gpu (bench.log, bench.jsonl)"
  if python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1 && [[ -s $OUT/bench.jsonl ]]; then
    echo >>"$OUT/bench.log"
    timed bench.log python3 bench/torch_side_by_side.py --ts-json "$OUT/bench.jsonl"
    row torch "$(status_of $rc)" "$secs" "bench/torch_side_by_side.py (bench.log)"
  else
    row torch SKIP 0 "no PyTorch with CUDA here"
  fi
}

step_profiler() {
  need_build profiler || return
  : >"$OUT/profiler.log"
  timed profiler.log bash tools/profiler_cuda_check.sh "$BUILD" "$OUT/profiler_cuda"
  row profiler "$(status_of $rc)" "$secs" "tools/profiler_cuda_check.sh (profiler.log, profiler_cuda/)"
}

# The GPU suites and tutorials/run_all.sh with the rungs chosen as a GPU of capability $1 would.
emulate() {
  local cap=$1 log=emulate-$1.log
  need_build "emulate-$cap" || return
  : >"$OUT/$log"
  echo "== TS_DEVICE_CAPABILITY=$cap ts_tests -tc='$GPU_SUITES'" >>"$OUT/$log"
  timed "$log" env TS_DEVICE_CAPABILITY="$cap" "$BUILD/ts_tests" -tc="$GPU_SUITES"
  local suite_rc=$rc suite_secs=$secs suite
  suite=$(doctest_summary "$OUT/$log")
  local work
  work=$(mktemp -d)
  echo "== TS_DEVICE_CAPABILITY=$cap tutorials/run_all.sh $BUILD (in $work)" >>"$OUT/$log"
  timed "$log" bash -c "cd '$work' && TS_DEVICE_CAPABILITY=$cap bash '$ROOT/tutorials/run_all.sh' '$ROOT/$BUILD'"
  local verdicts
  verdicts=$(grep -a -c 'kernels: expected' "$OUT/$log")
  row "emulate-$cap" "$(status_of $((suite_rc | rc)))" "$((suite_secs + secs))" \
    "suite: $suite | tutorials: exit $rc, $verdicts kernel counts checked, $(grep -a -c 'MISMATCH' "$OUT/$log") mismatches"
  rm -rf "$work"
}
step_emulate-8.0() { emulate 8.0; }
step_emulate-7.5() { emulate 7.5; }

step_ptx() {
  : >"$OUT/ptx.log"
  configure_and_build ptx.log build/gpu-ptx80 80-virtual
  if ((rc != 0)); then
    row ptx FAIL "$secs" "build of compute_80 PTX: see ptx.log"
    return
  fi
  local build_secs=$secs
  echo "== compute_80 PTX, JIT-compiled by the driver: ts_tests -tc='$GPU_SUITES'" >>"$OUT/ptx.log"
  timed ptx.log build/gpu-ptx80/ts_tests -tc="$GPU_SUITES"
  row ptx "$(status_of $rc)" "$((build_secs + secs))" "build ${build_secs}s (80-virtual), suite: $(doctest_summary "$OUT/ptx.log")"
}

step_no-code() {
  : >"$OUT/no-code.log"
  configure_and_build no-code.log build/gpu-sm80 80-real 00_tensors_and_views
  if ((rc != 0)); then
    row no-code FAIL "$secs" "build of sm_80 machine code: see no-code.log"
    return
  fi
  local build_secs=$secs
  echo "== sm_80 machine code only, on this GPU: 00_tensors_and_views --device cuda" >>"$OUT/no-code.log"
  timed no-code.log build/gpu-sm80/tutorials/00_tensors_and_views --device cuda --out-dir "$(mktemp -d)"
  local status=PASS detail
  detail=$(grep -a -m1 'carries no code' "$OUT/no-code.log" | cut -c1-160)
  # Expected: exit 1, the message, and the command that rebuilds for this GPU.
  if ((rc != 1)) || [[ -z $detail ]] || ! grep -a -q -- '-DCMAKE_CUDA_ARCHITECTURES=' "$OUT/no-code.log"; then
    status=FAIL
    detail="exit $rc, expected 1 and the no-code message: see no-code.log"
  fi
  row no-code "$status" "$((build_secs + secs))" "$detail"
}

t_start=$(date +%s)
for s in "${steps[@]}"; do
  "step_$s"
done
{
  echo
  echo "== make gpu-check: $* ($(($(date +%s) - t_start)) s; logs in $OUT)"
  printf '%-12s %-8s %7s  %s\n' step status time detail
  cat "$OUT/summary.txt"
}
exit "$failed"
