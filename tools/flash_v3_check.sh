#!/usr/bin/env bash
# tools/flash_v3_check.sh: the flash attention rungs on a GPU in one go: build, the SASS evidence
# of flash_v3 (HGMMA, spills, resources), the tests, compute-sanitizer (memcheck, racecheck,
# synccheck), tutorial 04 on the flash_v3 path with its trace, ts_bench's attention rows (the
# steps from v2 to v3 included) beside PyTorch's backends. Logs under $1 (default build/flash_v3).
#
#   tools/flash_v3_check.sh [out-dir]      SKIP_SANITIZER=1, SKIP_BENCH=1 leave those steps out
set -uo pipefail
out=${1:-build/flash_v3}
mkdir -p "$out"
jobs=$(nproc)
step() { echo; echo "== $*"; }

step build
cmake --preset dev >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
cmake --build build/dev -j"$jobs" --target ts_tests ts_ladder ts_bench 04_attention >"$out/build.log" 2>&1 ||
  { tail -50 "$out/build.log"; exit 1; }

step "SASS: flash_v3's tensor-core instructions and resources"
obj=$(find build/dev -name 'attention_cuda_flash_v3.cu.o' | head -1)
{
  echo "flash_v3 object: HGMMA instructions: $(cuobjdump -sass "$obj" | grep -c HGMMA)"
  echo "flash_v3 object: local-memory loads/stores (LDL/STL): $(cuobjdump -sass "$obj" | grep -cE ' (LDL|STL)')"
  cuobjdump -res-usage "$obj" 2>&1 | grep -E 'Function|REG'
} | tee "$out/sass.txt"

step tests
timeout 300 build/dev/ts_tests -tc='cuda: flash*,flash attention*,*attention*' 2>&1 | tee "$out/tests.txt" | tail -15

if [[ ${SKIP_SANITIZER:-0} != 1 ]]; then
  step "compute-sanitizer memcheck, racecheck, synccheck (small shapes)"
  for tool in memcheck racecheck synccheck; do
    TS_GPU_TEST_QUICK=1 timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 build/dev/ts_tests \
      -tc='cuda: flash*' >"$out/$tool.txt" 2>&1
    echo "$tool rc $?" | tee -a "$out/$tool.txt"
    tail -4 "$out/$tool.txt"
  done
fi

step "tutorial 04 on the flash_v3 path"
timeout 60 build/dev/tutorials/04_attention --path flash_v3 --device cuda --out-dir "$out/traces" 2>&1 |
  tee "$out/04_attention_flash_v3.txt" | tail -30

[[ ${SKIP_BENCH:-0} == 1 ]] && exit 0
step "ts_bench: attention rows, then PyTorch on the same workloads"
timeout 300 build/dev/ts_bench --gpu --filter attn/ --json "$out/bench.jsonl" >"$out/bench.txt" 2>&1
tail -40 "$out/bench.txt"
python3 bench/torch_side_by_side.py --ts-json "$out/bench.jsonl" 2>&1 | tee "$out/side_by_side.txt"
