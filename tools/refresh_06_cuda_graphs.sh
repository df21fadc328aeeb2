#!/usr/bin/env bash
# tools/refresh_06_cuda_graphs.sh: every run of tutorial 06 (CUDA graphs), made again, into one folder.
#
#   tools/refresh_06_cuda_graphs.sh --device cuda   # on the H200 -> docs/h200-runs/06_cuda_graphs/
#   tools/refresh_06_cuda_graphs.sh --device cpu    # anywhere    -> docs/cpu-runs/06_cuda_graphs/ (eager only)
#
# Options: --build DIR (build/dev: 06_cuda_graphs, ts_tests, ts_trace_check and on cuda ts_bench built), --out DIR
# (the folder above), emptied first but for its README.md. Steps: tutorial 06 with --mode both and
# --warmup 5 on each workload (part 1's step at 64 and at 4096, the GeGLU MLP, attention), then at 64
# with --mode graph alone (the profiler first starts after the capture: --tag graph_only); every trace
# through ts_trace_check and tools/trace_readings.py; on cuda, ts_bench's graph entries beside
# PyTorch's torch.cuda.graph replays of the same work (bench/torch_side_by_side.py) and PyTorch's
# profile of a replay (tools/pytorch_cuda_graph.py, into pytorch/); last, the tests of graphs, of
# their replays in the profiler and of the tutorial. Each run's "$ command", output and exit status
# go to <name>.out.txt; its tables and traces to traces/. run.log is the screen; a step that fails
# is logged and the run goes on. Exit status 0 when every step passed.
set -u
cd "$(dirname "$0")/.."
source tools/refresh_common.sh
refresh_options refresh_06_cuda_graphs.sh 06_cuda_graphs "$@"
tut=$build/tutorials/06_cuda_graphs
require_built "$tut" "$build/ts_tests" "$build/ts_trace_check"
[[ $dev == cpu ]] || require_built "$build/ts_bench"
# This run's files go; README.md stays.
mkdir -p "$out"
find "$out" -mindepth 1 -not -name README.md -delete
mkdir -p "$out/traces"

# tutorial NAME ARGS...: tutorial 06 on $dev with ARGS, its traces into traces/; "$ command", what it
# printed (line by line, so that stderr lands where it happened) and its exit status into NAME.out.txt.
tutorial() {
  local name=$1 rc
  shift
  local args=(--device "$dev" "$@" --out-dir "$out/traces")
  {
    echo "\$ $tut ${args[*]}"
    stdbuf -oL "$tut" "${args[@]}" 2>&1
    rc=$?
    echo "exit status: $rc"
  } >"$out/$name.out.txt"
  status "$name" "$rc"
  grep -E "^(check|kernels|  eager over|  (CPU|GPU|host|wall) .*per step|all checks|SOME CHECKS)" "$out/$name.out.txt"
}

main() {
  step "machine"
  if [[ $dev == cuda ]]; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  fi
  echo "cores: $(nproc)"

  step "tutorial 06, --mode both --warmup 5: the step at 64 and 4096, the MLP, attention"
  tutorial step_64 --workload step --size 64 --mode both --warmup 5
  tutorial step_4096 --workload step --size 4096 --mode both --warmup 5
  tutorial mlp --workload mlp --mode both --warmup 5
  tutorial attention --workload attention --mode both --warmup 5
  step "tutorial 06, the step at 64 with --mode graph alone (no profiler before the capture)"
  tutorial step_64_graph_only --workload step --size 64 --mode graph --warmup 5 --tag graph_only

  step "ts_trace_check --steps 3 and the readings of every trace"
  check_traces "$out/traces" "$out/trace_check.txt"
  python3 tools/trace_readings.py "$out"/traces/*.json
  status readings $?

  if [[ $dev == cuda ]]; then
    step "ts_bench --filter graph/, and PyTorch's torch.cuda.graph on the same work (bench/torch_side_by_side.py)"
    "$build/ts_bench" --filter graph/ --json "$out/bench.jsonl" >"$out/bench.txt" 2>&1
    status bench $?
    cat "$out/bench.txt"
    timeout 120 python3 -u bench/torch_side_by_side.py --ts-json "$out/bench.jsonl" >"$out/side_by_side.txt" 2>&1
    status side_by_side $?
    cat "$out/side_by_side.txt"

    step "PyTorch: tools/pytorch_cuda_graph.py (torch.cuda.graph on the same step at 64 and 4096)"
    mkdir -p "$out/pytorch"
    timeout 120 python3 -u tools/pytorch_cuda_graph.py "$out/pytorch" >"$out/pytorch/pytorch_cuda_graph.out.txt" 2>&1
    status torch $?
  fi

  # Without a GPU the graph cases say why they did nothing; the CPU ones (refusals, replays expanded
  # in hand-made recordings) and the tutorial's run.
  step "tests: ts_tests -tc='*cuda graph*,profiler graph*,*tutorial 06*'"
  "$build/ts_tests" -tc='*cuda graph*,profiler graph*,*tutorial 06*' >"$out/tests.txt" 2>&1
  status tests $?
  grep -E "test cases|assertions" "$out/tests.txt"

  step "done: $failed step(s) failed"
  return $((failed > 0))
}
main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
