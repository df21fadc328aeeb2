#!/usr/bin/env bash
# tools/hopper_gemm_check.sh: the tensor-core GEMM rungs on a GPU in one go: build, tests,
# compute-sanitizer, the SASS evidence (HGMMA, spills), the ladders of mm at 4096 and 8192 and of
# linear_geglu, tutorial 03's merged and epilogue paths, ts_bench's GEMM and MLP rows beside PyTorch. Logs under $1 (default build/hopper).
#
#   tools/hopper_gemm_check.sh [out-dir]
set -uo pipefail
out=${1:-build/hopper}
mkdir -p "$out"
jobs=$(nproc)
step() { echo; echo "== $*"; }

step build
cmake --preset dev >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
cmake --build build/dev -j"$jobs" --target ts_tests ts_ladder ts_bench 03_mlp >"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }

step "SASS: tensor-core instructions and resources of the GEMM rungs"
obj=$(find build/dev -name 'matmul_cuda_wgmma.cu.o' | head -1)
obj_mma=$(find build/dev -name 'matmul_cuda_mma.cu.o' | head -1)
{
  echo "wgmma object: HGMMA instructions: $(cuobjdump -sass "$obj" | grep -c HGMMA)"
  echo "wgmma object: HMMA instructions: $(cuobjdump -sass "$obj" | grep -c ' HMMA')"
  echo "mma object: HMMA instructions: $(cuobjdump -sass "$obj_mma" | grep -c ' HMMA')"
  echo "wgmma object: local-memory loads/stores (LDL/STL): $(cuobjdump -sass "$obj" | grep -cE ' (LDL|STL)')"
  cuobjdump -res-usage "$obj" "$obj_mma" 2>&1 | grep -E 'Function|REG'
} | tee "$out/sass.txt"

step tests
timeout 150 build/dev/ts_tests -tc='cuda: tensor-core*,cuda: every variant: linear_geglu*,cuda: every variant: mm*,nn.GeGLUMLP*,ops.linear_geglu*' \
  2>&1 | tee "$out/tests.txt" | tail -15

step ladders
timeout 120 build/dev/ts_ladder --op mm --shape 8192,8192,8192 2>&1 | tee "$out/ladder_mm_8192.txt" | tail -9
timeout 120 build/dev/ts_ladder --op mm --shape 4096,4096,4096 2>&1 | tee "$out/ladder_mm_4096.txt" | tail -9
timeout 120 build/dev/ts_ladder --op linear_geglu 2>&1 | tee "$out/ladder_linear_geglu.txt" | tail -5

step "tutorial 03: merged and epilogue"
for path in merged epilogue; do
  timeout 60 build/dev/tutorials/03_mlp --path "$path" --device cuda --out-dir "$out/traces" 2>&1 | tee "$out/03_mlp_$path.txt" | tail -25
done

step "ts_bench: GEMMs and MLP paths, then PyTorch on the same workloads"
timeout 200 build/dev/ts_bench --gpu --filter gemm/ --json "$out/bench_gemm.jsonl" >"$out/bench.txt" 2>&1
timeout 200 build/dev/ts_bench --gpu --filter mlp/ --json "$out/bench_mlp.jsonl" >>"$out/bench.txt" 2>&1
cat "$out/bench_gemm.jsonl" "$out/bench_mlp.jsonl" >"$out/bench.jsonl"
python3 bench/torch_side_by_side.py --ts-json "$out/bench.jsonl" 2>&1 | tee "$out/side_by_side.txt"

[[ ${SKIP_SANITIZER:-0} == 1 ]] && exit 0
step "compute-sanitizer memcheck + racecheck (quick sweep)"
TS_GPU_TEST_QUICK=1 timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/dev/ts_tests \
  -tc='cuda: tensor-core*,cuda: every variant: linear_geglu*' >"$out/memcheck.txt" 2>&1; echo "memcheck rc $?" | tee -a "$out/memcheck.txt"
tail -3 "$out/memcheck.txt"
TS_GPU_TEST_QUICK=1 timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 build/dev/ts_tests \
  -tc='cuda: every variant: linear_geglu*' >"$out/racecheck.txt" 2>&1; echo "racecheck rc $?" | tee -a "$out/racecheck.txt"
tail -3 "$out/racecheck.txt"

