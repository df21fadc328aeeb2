#!/usr/bin/env bash
# tools/refresh_05_memory_and_syncs.sh: every run tutorials/05_memory_and_syncs.md quotes, made again,
# into the folder it cites.
#
#   tools/refresh_05_memory_and_syncs.sh --device cuda   # on the H200 -> docs/h200-runs/05_memory_and_syncs/
#   tools/refresh_05_memory_and_syncs.sh --device cpu    # anywhere    -> docs/cpu-runs/05_memory_and_syncs/
#
# Options: --build DIR (build/dev: 05_memory_and_syncs, ts_trace_svg, ts_trace_check and
# ts_tests built), --out DIR (the folder above). The folder is emptied first. Steps: the tests of what the
# tutorial relies on, the tutorial's lessons (and again without the caching allocator), the memory
# timelines and two step timelines drawn, every trace checked, then on a GPU PyTorch's side
# (tutorials/05_memory_and_syncs.py) and one kernel in Nsight Compute. run.log is the screen: each
# step with its exit status; a step that fails is logged and the run goes on. Exit status 0 when
# every step passed.
set -u
cd "$(dirname "$0")/.."
source tools/refresh_common.sh
refresh_options refresh_05_memory_and_syncs.sh 05_memory_and_syncs "$@"
tut=$build/tutorials/05_memory_and_syncs
svg=$build/ts_trace_svg
require_built "$tut" "$svg" "$build/ts_trace_check" "$build/ts_tests"
# The folder's README.md says what each file is: it stays; everything else is this run's.
find "$out" -mindepth 1 -not -name README.md -delete 2>/dev/null
mkdir -p "$out/traces" "$out/pictures"

main() {
  step "machine"
  if [[ $dev == cuda ]]; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  fi
  echo "cores: $(nproc)"

  step "tests: what tutorial 05 relies on"
  "$build/ts_tests" -tc='profiler memory*,profiler cuda memory*,profiler cuda syncs*,profiler cuda tutorial*,tutorials: 05*' \
    >"$out/tests.txt" 2>&1
  status tests $?
  grep -E "skipped|test cases|assertions" "$out/tests.txt" | sort | uniq -c

  step "tutorial 05, every lesson, --warmup 5"
  $tut --device "$dev" --warmup 5 --out-dir "$out/traces" >"$out/tutorial_all.txt" 2>&1
  status all $?
  grep -E "MISMATCH|FAILED|all checks|SOME CHECKS" "$out/tutorial_all.txt"

  step "tutorial 05 --lesson memory and --lesson timing under TS_CUDA_NO_CACHING=1"
  TS_CUDA_NO_CACHING=1 $tut --device "$dev" --lesson memory --warmup 5 --out-dir "$out/traces" \
    >"$out/tutorial_memory_nocache.txt" 2>&1
  status "memory nocache" $?
  TS_CUDA_NO_CACHING=1 $tut --device "$dev" --lesson timing --out-dir "$out/traces" >"$out/tutorial_timing_nocache.txt" 2>&1
  status "timing nocache" $?

  step "tutorial 05 --lesson timing at 4x the rows (more than L2 holds)"
  rows=$([[ $dev == cuda ]] && echo 8192 || echo 1024)
  $tut --device "$dev" --lesson timing --timing-rows "$rows" --out-dir "$out/traces" >"$out/tutorial_timing_$rows.txt" 2>&1
  status "timing $rows" $?

  step "pictures: memory timelines (ts_trace_svg --memory) and two steps of the sync loops"
  for json in "$out"/traces/*_memory_*.json "$out"/traces/*_first_forwards_*.json; do
    name=$(basename "$json" .json)
    case $name in *first_forwards*) stepn=0 ;; *) stepn=3 ;; esac
    $svg --memory "$json" --step "$stepn" -o "$out/pictures/${name}_step${stepn}_memory.svg" >/dev/null
    status "$name step $stepn" $?
  done
  for json in "$out"/traces/*_first_forwards_*.json; do
    $svg --memory "$json" -o "$out/pictures/$(basename "$json" .json)_memory.svg" >/dev/null
    status "$(basename "$json") whole" $?
  done
  for json in "$out"/traces/*_syncs_*.json; do
    $svg "$json" --step 3 -o "$out/pictures/$(basename "$json" .json)_step3.svg" >/dev/null
    status "$(basename "$json")" $?
  done

  step "ts_trace_check --steps 3 on every trace"
  check_traces "$out/traces" "$out/trace_check.txt"

  if [[ $dev == cuda ]]; then
    step "PyTorch: tutorials/05_memory_and_syncs.py"
    timeout 120 python3 tutorials/05_memory_and_syncs.py >"$out/torch.txt" 2>&1
    status torch $?

    step "Nsight Compute: one gelu kernel of the timing lesson"
    timeout 90 ncu --section SpeedOfLight --kernel-name-base demangled -k regex:GeluTanh -c 1 \
      $tut --device cuda --lesson timing --active 1 --out-dir "$(mktemp -d)" >"$out/ncu.txt" 2>&1
    status ncu $?
  fi
  step "done: $failed step(s) failed"
  return $((failed > 0))
}
main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
