#!/usr/bin/env bash
# The one run behind docs/h200-runs/05_memory_and_syncs/ (and, with DEVICE=cpu, docs/cpu-runs/05_memory_and_syncs/):
# build the dev preset, run tutorial 05's tests, run the tutorial's lessons (and again without the
# caching allocator), draw the memory timelines and two step timelines, check every trace, then
# PyTorch's side (tutorials/05_memory_and_syncs.py) and one kernel in Nsight Compute.
#
# Usage, in the checkout: bash docs/h200-runs/05_memory_and_syncs/run.sh OUT_DIR
#   DEVICE=cuda|cpu (default cuda), JOBS=N (build parallelism, default 16)
# Everything lands in OUT_DIR/r/; run.log is the screen. A step that fails is logged with its exit
# status and the run goes on.
set -u
out=${1:?usage: run.sh OUT_DIR}
dev=${DEVICE:-cuda}
jobs=${JOBS:-16}
r=$out/r
mkdir -p "$r/traces" "$r/pictures"
t0=$SECONDS
step() { echo; echo "== $1 (t = $((SECONDS - t0)) s)"; }
tut=build/dev/tutorials/05_memory_and_syncs
svg=build/dev/ts_trace_svg

{
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1 || true
  nproc

  step "build (dev preset, -j$jobs): 05_memory_and_syncs ts_trace_svg ts_trace_check ts_tests"
  { cmake --preset dev && cmake --build build/dev -j"$jobs" --target 05_memory_and_syncs ts_trace_svg ts_trace_check ts_tests; } \
    > "$r/build.txt" 2>&1
  echo "build rc=$?"

  step "tests: what tutorial 05 relies on"
  build/dev/ts_tests -tc='profiler memory*,profiler cuda memory*,profiler cuda syncs*,profiler cuda tutorial*,tutorials: 05*' \
    > "$r/tests.txt" 2>&1
  echo "tests rc=$?"
  grep -E "skipped|test cases|assertions" "$r/tests.txt" | sort | uniq -c

  step "tutorial 05, every lesson, --warmup 5"
  $tut --device "$dev" --warmup 5 --out-dir "$r/traces" > "$r/tutorial_all.txt" 2>&1
  echo "all rc=$?"
  grep -E "MISMATCH|FAILED|all checks|SOME CHECKS" "$r/tutorial_all.txt"

  step "tutorial 05 --lesson memory and --lesson timing under TS_CUDA_NO_CACHING=1"
  TS_CUDA_NO_CACHING=1 $tut --device "$dev" --lesson memory --warmup 5 --out-dir "$r/traces" > "$r/tutorial_memory_nocache.txt" 2>&1
  echo "memory nocache rc=$?"
  TS_CUDA_NO_CACHING=1 $tut --device "$dev" --lesson timing --out-dir "$r/traces" > "$r/tutorial_timing_nocache.txt" 2>&1
  echo "timing nocache rc=$?"

  step "tutorial 05 --lesson timing at 4x the rows (more than L2 holds)"
  rows=$([ "$dev" = cuda ] && echo 8192 || echo 1024)
  $tut --device "$dev" --lesson timing --timing-rows "$rows" --out-dir "$r/traces" > "$r/tutorial_timing_$rows.txt" 2>&1
  echo "timing $rows rc=$?"

  step "pictures: memory timelines (ts_trace_svg --memory) and two steps of the sync loops"
  for json in "$r"/traces/*_memory_*.json "$r"/traces/*_first_forwards_*.json; do
    name=$(basename "$json" .json)
    case $name in *first_forwards*) stepn=0 ;; *) stepn=3 ;; esac
    $svg --memory "$json" --step "$stepn" -o "$r/pictures/${name}_step${stepn}_memory.svg"; echo "$name step $stepn rc=$?"
  done
  for json in "$r"/traces/*_first_forwards_*.json; do
    $svg --memory "$json" -o "$r/pictures/$(basename "$json" .json)_memory.svg"; echo "$(basename "$json") whole rc=$?"
  done
  for json in "$r"/traces/*_syncs_*.json; do
    $svg "$json" --step 3 -o "$r/pictures/$(basename "$json" .json)_step3.svg"; echo "$(basename "$json") rc=$?"
  done

  step "ts_trace_check on every trace"
  for json in "$r"/traces/*.json; do
    echo "-- $(basename "$json")"
    build/dev/ts_trace_check "$json" --steps 3 2>&1 | tail -3
  done > "$r/trace_check.txt"
  grep -c "^-- " "$r/trace_check.txt"

  if [ "$dev" = cuda ]; then
    step "PyTorch: tutorials/05_memory_and_syncs.py"
    timeout 120 python3 tutorials/05_memory_and_syncs.py > "$r/torch.txt" 2>&1
    echo "torch rc=$?"

    if [ $((SECONDS - t0)) -lt 200 ]; then
      step "Nsight Compute: one gelu kernel of the timing lesson"
      timeout 70 ncu --section SpeedOfLight --kernel-name-base demangled -k regex:GeluTanh -c 1 \
        $tut --device cuda --lesson timing --active 1 \
        --out-dir /tmp/ncu05 > "$r/ncu.txt" 2>&1
      echo "ncu rc=$?"
    else
      step "Nsight Compute: skipped, no time left"
    fi
  fi
  step "done"
} 2>&1 | tee "$r/run.log"
tar czf "$out/r.tgz" -C "$out" r
