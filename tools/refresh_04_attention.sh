#!/usr/bin/env bash
# tools/refresh_04_attention.sh: every run tutorials/04_attention.md quotes, made again, into the
# folder it cites.
#
#   tools/refresh_04_attention.sh --device cuda   # on the H200 -> docs/h200-runs/04_attention/
#   tools/refresh_04_attention.sh --device cpu    # anywhere    -> docs/cpu-runs/04_attention/ (the tutorial alone)
#
# The H200 folder's subfolders flash_v3/ and rows_rungs/ are their own runs and stay.
# Options: --build DIR (build/dev: 04_attention, ts_tests, ts_bench and ts_trace_check
# built), --out DIR (the folder above). Steps: the attention tests; tutorial 04 on every path at its default shape (q, k, v
# [4, 16, 1024, 64] bf16, causal, --warmup 5) and the naive path again with --no-causal, each
# writing its trace and table into traces/; ts_trace_check and the readings (tools/trace_readings.py)
# of every trace; ts_bench on the attention workloads and the 8192^3 GEMM; PyTorch's counterpart of
# each entry and every PyTorch attention backend (bench/torch_side_by_side.py). run.log is the
# screen; a step that fails is logged and the run goes on. Exit status 0 when every step passed.
set -u
cd "$(dirname "$0")/.."
source tools/refresh_common.sh
refresh_options refresh_04_attention.sh 04_attention "$@"
tut=$build/tutorials/04_attention
require_built "$tut" "$build/ts_tests" "$build/ts_bench" "$build/ts_trace_check"
# This run's files go; README.md and the subfolders (other runs) stay.
find "$out" -maxdepth 1 -type f -not -name README.md -delete 2>/dev/null
rm -rf "$out/traces"
mkdir -p "$out/traces"

# On the CPU: every path as the tutorial runs it there (the fused ones say why they cannot and run
# the math path), each with its trace checked.
cpu_main() {
  step "tutorial 04 on the CPU, every path, default shape, --warmup 1"
  for path in naive inplace math flash_v1 flash_v2 flash_v3; do
    "$tut" --device cpu --path "$path" --warmup 1 --out-dir "$out/traces" >"$out/tutorial_$path.txt" 2>&1
    status "$path" $?
  done
  check_traces "$out/traces" "$out/trace_check.txt"
  step "done: $failed step(s) failed"
  return $((failed > 0))
}

main() {
  [[ $dev == cpu ]] && { cpu_main; return; }
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1

  # Not the cases that hold the pages to this folder's files: the folder is being written again.
  step "tests: ts_tests -tc='*nn attention*,*04_attention*,*tutorial 04*,sdpa*,*flash*' -tce='*every number*'"
  "$build/ts_tests" -tc='*nn attention*,*04_attention*,*tutorial 04*,sdpa*,*flash*' -tce='*every number*' \
    >"$out/tests.txt" 2>&1
  status tests $?
  grep -E "test cases|assertions" "$out/tests.txt"

  step "tutorial 04, every path, default shape, --warmup 5"
  for path in naive inplace math flash_v1 flash_v2 flash_v3; do
    "$tut" --device cuda --path "$path" --warmup 5 --out-dir "$out/traces" >"$out/tutorial_$path.txt" 2>&1
    status "$path" $?
    grep -E "^(kernels|per forward|check)" "$out/tutorial_$path.txt"
  done
  "$tut" --device cuda --path naive --no-causal --warmup 5 --out-dir "$out/traces" >"$out/tutorial_naive_noncausal.txt" 2>&1
  status "naive --no-causal" $?

  step "ts_trace_check --steps 3 and the readings of every trace"
  check_traces "$out/traces" "$out/trace_check.txt"
  python3 tools/trace_readings.py "$out"/traces/*.json
  status readings $?

  step "ts_bench --filter attn, then gemm/bf16/8192"
  rm -f "$out/bench.jsonl"
  "$build/ts_bench" --filter attn --json "$out/bench_attn.jsonl" >"$out/bench.txt" 2>&1
  status "bench attn" $?
  "$build/ts_bench" --filter gemm/bf16/8192 --json "$out/bench_gemm.jsonl" >>"$out/bench.txt" 2>&1
  status "bench gemm" $?
  cat "$out/bench_attn.jsonl" "$out/bench_gemm.jsonl" >"$out/bench.jsonl" && rm -f "$out"/bench_{attn,gemm}.jsonl

  step "PyTorch side by side: bench/torch_side_by_side.py"
  timeout 240 python3 bench/torch_side_by_side.py --ts-json "$out/bench.jsonl" --out "$out/side_by_side.json" \
    >"$out/side_by_side.txt" 2>&1
  status torch $?
  step "done: $failed step(s) failed"
  return $((failed > 0))
}
main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
