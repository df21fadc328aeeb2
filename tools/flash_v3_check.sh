#!/usr/bin/env bash
# tools/flash_v3_check.sh: the attention rungs on a GPU in one go, flash_v3 first: build, the SASS
# evidence of flash_v3 (HGMMA, spills, resources), the attention tests, tutorial 04 on the flash_v3
# path with its trace (checked), the sdpa ladder, ts_bench's attention rows (the steps from v2 to
# v3 included) beside PyTorch's backends, Nsight Compute on two of flash_v3's kernels, and
# compute-sanitizer (memcheck, racecheck, synccheck) on the flash tests. Logs under $1 (default
# build/flash_v3).
#
#   tools/flash_v3_check.sh [out-dir]   ONLY=sanitizers runs just those; SKIP_SANITIZER=1 leaves them
#                                       out; NCU=0 leaves Nsight Compute out
#   BUILD=build/gpu tools/flash_v3_check.sh ...   uses a build folder already configured (with the
#                                       sm_90a files, as the portable set and the H200's own have)
#                                       instead of configuring the dev preset in build/dev
set -uo pipefail
out=${1:-build/flash_v3}
mkdir -p "$out"
jobs=$(nproc)
step() { echo; echo "== $*"; }

build=${BUILD:-build/dev}
step "build ($build)"
if [[ -z ${BUILD:-} ]]; then
  cmake --preset dev >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
elif [[ ! -f $build/build.ninja ]]; then
  echo "flash_v3_check.sh: BUILD=$build is not a configured build folder" >&2
  exit 1
fi
cmake --build "$build" -j"$jobs" --target ts_tests ts_ladder ts_bench ts_trace_check 04_attention \
  >"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }

if [[ ${ONLY:-} != sanitizers ]]; then
  step "SASS: flash_v3's tensor-core instructions and resources"
  obj=$(find "$build" -name 'attention_cuda_flash_v3.cu.o' | head -1)
  {
    echo "flash_v3 object: HGMMA instructions: $(cuobjdump -sass "$obj" | grep -c HGMMA)"
    echo "flash_v3 object: local-memory loads/stores (LDL/STL): $(cuobjdump -sass "$obj" | grep -cE ' (LDL|STL)')"
    cuobjdump -res-usage "$obj" 2>&1 | grep -E 'Function|REG' | grep -B1 -A0 'REG' | grep -v '^--'
  } | tee "$out/sass.txt" | head -3

  step tests
  timeout 400 "$build"/ts_tests -tc='*flash*,*attention*,*tutorial 04*,sdpa*,cuda: every variant: scaled*' \
    2>&1 | sed "s#$(pwd)/##g" | tee "$out/tests.txt" | tail -4

  step "tutorial 04 on the flash_v3 path"
  timeout 120 "$build"/tutorials/04_attention --path flash_v3 --warmup 5 --out-dir "$out/traces" 2>&1 |
    sed "s#$(pwd)/##g" | tee "$out/tutorial_flash_v3.txt" | tail -12
  "$build"/ts_trace_check "$out/traces/4x16x1024x64_bf16_warm_flash_v3.json" --steps 3 2>&1 | tee "$out/trace_check.txt" | tail -3

  step "the sdpa ladder"
  timeout 200 "$build"/ts_ladder --op scaled_dot_product_attention 2>&1 | tee "$out/ladder_sdpa.txt" | tail -12

  step "ts_bench: attention rows and the bf16 GEMM ceiling, then PyTorch on the same workloads"
  { timeout 300 "$build"/ts_bench --gpu --filter attn/ --json "$out/bench_attn.jsonl" &&
    timeout 100 "$build"/ts_bench --gpu --filter gemm/bf16/8192 --json "$out/bench_gemm.jsonl"; } >"$out/bench.txt" 2>&1
  cat "$out/bench_attn.jsonl" "$out/bench_gemm.jsonl" >"$out/bench.jsonl"
  grep -E 'flash|gemm' "$out/bench.txt" | head -40
  python3 bench/torch_side_by_side.py --ts-json "$out/bench.jsonl" --out "$out/side_by_side.json" >"$out/side_by_side.txt" 2>&1
  tail -32 "$out/side_by_side.txt"

  if [[ ${NCU:-1} == 1 ]]; then
    step "Nsight Compute: one launch of flash_v3's kernel at D = 128 non-causal and D = 64 causal"
    sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy)
    for shape in "d128_128x176_noncausal B2H16S4096D128_noncausal" "d64_192x128_causal B4H16S4096D64"; do
      read -r name filter <<<"$shape"
      # The kernel by its exact name: the filter also runs flash_v3's steps, whose kernels come first.
      kernel=ts_flash_attn_fwd_v3_bf16_${name%_*}
      timeout 200 ncu "${sections[@]}" --kernel-name "$kernel" --launch-count 1 \
        "$build"/ts_bench --gpu --filter "attn/bf16/$filter/flash_v3" >"$out/ncu_$name.txt" 2>&1
      rc=$?
      grep -q "^  $kernel(" "$out/ncu_$name.txt" || { echo "ncu $name: $kernel was not profiled"; rc=1; }
      echo "ncu $name exit $rc"
    done
  fi
fi

[[ ${SKIP_SANITIZER:-0} == 1 ]] && exit 0
step "compute-sanitizer memcheck, racecheck, synccheck (the flash tests, small shapes)"
for tool in memcheck racecheck synccheck; do
  TS_GPU_TEST_QUICK=1 timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 9 "$build"/ts_tests \
    -tc='cuda: flash*' 2>&1 | sed "s#$(pwd)/##g" >"$out/$tool.txt"
  echo "$tool exit ${PIPESTATUS[0]}" | tee -a "$out/$tool.txt"
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test cases' "$out/$tool.txt" | tail -2
done
