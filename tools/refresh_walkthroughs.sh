#!/usr/bin/env bash
# tools/refresh_walkthroughs.sh --device cpu|cuda: every run the walk-throughs of tutorials 00-03
# quote, made again, into the folder they cite.
#
#   tools/refresh_walkthroughs.sh --device cpu     # -> docs/cpu-runs/   (any machine)
#   tools/refresh_walkthroughs.sh --device cuda    # -> docs/h200-runs/  (the H200)
#
# Options: --build DIR (build/dev: the tutorials and ts_bench), --debug-build DIR (build/debug:
# the cuda-gdb session; skipped when absent), --out DIR (the folder above), --skip-bench,
# --readings-only (no runs: only the readings below, again, from the traces already in OUT),
# --hopper-only (cuda: only the Hopper section, OUT/hopper/, then the readings), --bench-only (cuda:
# only OUT/bench/, ts_bench and PyTorch: the slowest part, which a time-limited machine runs apart),
# --only T (one tutorial's runs, T one of 00_tensors_and_views 01_matmul_add 02_linear 03_mlp: its
# folders alone are replaced; for 03_mlp on cuda also its two runs in OUT/hopper/, the ladders kept).
#
# For every run, OUT/<tutorial>/<name>.out.txt holds "$ command", everything it printed and its
# exit status; the tables and traces it wrote sit beside it, named by their configuration. Each
# trace gets readings that need no GPU: <config>.steps.txt, one line per event of each recorded
# step (start relative to the step, duration, nesting, CUPTI correlation) and what follows the
# last step (the profiler's synchronize); on a GPU <config>.kernels.txt, every kernel's durations
# in launch order with min, median, mean and max; and <config>.check.txt, what ts_trace_check says.
# On cuda the script then runs PyTorch's addmm on the same two shapes of C (OUT/pytorch/), the
# debugging sessions of tutorials/debugging_on_a_gpu.md (OUT/debugging/: cuda-gdb in batch mode on
# the debug build, ncu on one of our kernels, the tutorials run under ncu), and last ts_bench and
# PyTorch on the workloads the walk-throughs time (OUT/bench/; torch.compile makes it the slowest
# part). OUT/commands.txt lists every command with its exit status. Tutorial output is line
# buffered (stdbuf -oL) so that the profiler's warnings on stderr land where they happen.
#
# The walk-throughs cite these files, and tests/test_walkthroughs.cpp fails when a quoted number or
# excerpt line is not in the file its page names: after a refresh, run `make test` and update the
# pages where it fails. Only the folders it runs for are replaced (see tutorial_dirs below).
set -uo pipefail
cd "$(dirname "$0")/.."
device=""
build=build/dev
debug_build=build/debug
out=""
bench=1
readings_only=0
hopper_only=0
bench_only=0
only=""
while (($#)); do
  case $1 in
    --device) device=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --debug-build) debug_build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --skip-bench) bench=0; shift ;;
    --readings-only) readings_only=1; shift ;;
    --hopper-only) hopper_only=1; shift ;;
    --bench-only) bench_only=1; shift ;;
    --only) only=$2; shift 2 ;;
    *) echo "refresh_walkthroughs.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
case $device in
  cpu) out=${out:-docs/cpu-runs} ;;
  cuda) out=${out:-docs/h200-runs} ;;
  *) echo "refresh_walkthroughs.sh: --device cpu or --device cuda" >&2; exit 2 ;;
esac
case $only in
  "" | 00_tensors_and_views | 01_matmul_add | 02_linear | 03_mlp) ;;
  *) echo "refresh_walkthroughs.sh: --only takes 00_tensors_and_views, 01_matmul_add, 02_linear or 03_mlp" >&2; exit 2 ;;
esac
# want T: whether this run makes tutorial T's outputs.
want() { [[ -z $only || $only == "$1" ]]; }
bin=$build/tutorials
for t in 00_tensors_and_views 01_matmul_add 02_linear 03_mlp; do
  [[ -x $bin/$t ]] || { echo "refresh_walkthroughs.sh: $bin/$t not built (cmake --build $build --target $t)" >&2; exit 2; }
done
# The folders this script writes, and only those: each is emptied first, so that nothing of an
# earlier run survives beside the new one (04_attention/, 05_memory_and_syncs/, ladder/ and the
# others beside them in OUT are written by their own scripts, see docs/README.md).
tutorial_dirs=(00_tensors_and_views 01_matmul_add 01_matmul_add_active20 01_matmul_add_refill 02_linear 03_mlp)
extra_dirs=(hopper)
if [[ $device == cuda ]]; then
  extra_dirs+=(pytorch debugging)
  ((bench)) && extra_dirs+=(bench)
fi
if ((bench_only)); then
  written=(bench)
elif ((hopper_only)); then
  written=(hopper)
elif ((readings_only)); then
  written=()
elif [[ -n $only ]]; then
  written=("$only")
  [[ $only == 01_matmul_add && $device == cuda ]] && written+=(01_matmul_add_active20 01_matmul_add_refill)
else
  written=("${tutorial_dirs[@]}" "${extra_dirs[@]}")
fi
mkdir -p "$out"
for d in "${written[@]}"; do rm -rf "${out:?}/$d"; done
# A full run starts commands.txt again; --only T replaces T's lines in it (those writing to OUT/T or
# OUT/hopper, which it runs again); the other parts add their commands to it.
if [[ -n $only ]]; then
  [[ ! -f $out/commands.txt ]] || sed -i "\#tutorials/$only .*--out-dir $out/\($only\|hopper\)\$#d" "$out/commands.txt"
elif ! ((bench_only || hopper_only || readings_only)); then
  : >"$out/commands.txt"
fi
failures=0

# run FILE CMD...: "$ CMD", its output and "exit status: N" into FILE; the command and status into commands.txt.
run() {
  local file=$1
  shift
  local shown="$*"
  shown=${shown#stdbuf -oL }
  mkdir -p "$(dirname "$file")"
  {
    echo "\$ $shown"
    "$@" 2>&1
    echo "exit status: $?"
  } >"$file"
  local status
  status=$(tail -n1 "$file" | sed 's/exit status: //')
  printf '%-4s %s\n' "$status" "$shown" >>"$out/commands.txt"
  printf '%-4s %s\n' "$status" "$shown"
  [[ $status == 0 ]] || failures=$((failures + 1))
}

# ---- ts_bench and PyTorch on the workloads the walk-throughs time (cuda only) ------------------------
bench_section() {
  if ((bench)) && [[ -x $build/ts_bench ]]; then
    mkdir -p "$out/bench"
    rm -f "$out/bench/ts_bench.jsonl"
    run "$out/bench/ts_bench.out.txt" bash -c "for f in raw_launch dispatch/cuda profiler/cuda linear/ mlp/ geglu/; do
        $build/ts_bench --filter \$f --json $out/bench/part.jsonl || exit 1; cat $out/bench/part.jsonl >>$out/bench/ts_bench.jsonl; done;
        rm -f $out/bench/part.jsonl"
    run "$out/bench/torch_side_by_side.out.txt" timeout 240 python3 bench/torch_side_by_side.py \
      --ts-json "$out/bench/ts_bench.jsonl"
  fi
}
if ((bench_only)); then
  bench_section
  echo "refresh_walkthroughs.sh: $failures run(s) exited non-zero; outputs in $out/bench"
  exit $((failures > 0))
fi

# tutorial T NAME ARGS...: one tutorial run, its tables and traces in OUT/T.
tutorial() {
  local t=$1 name=$2
  shift 2
  run "$out/$t/$name.out.txt" stdbuf -oL "$bin/$t" --device "$device" "$@" --out-dir "$out/$t"
}

if ((readings_only == 0 && hopper_only == 0)); then
# ---- the machine ---------------------------------------------------------------------------------
{
  echo "cores: $(nproc)"
  if [[ $device == cuda ]]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    /usr/local/cuda/bin/nvcc --version | tail -n 2
  fi
} >"$out/machine.txt" 2>&1

# ---- 00: views ---------------------------------------------------------------------------------
want 00_tensors_and_views && tutorial 00_tensors_and_views views

# ---- 01: matmul + add ----------------------------------------------------------------------------
t=01_matmul_add
if want $t; then
tutorial $t 64_cold --size 64
# --unprofiled: after the profile, the same step timed with the profiler off (the profiler's own cost).
tutorial $t 64_warm --size 64 --warmup 5 --unprofiled 200
tutorial $t 64_warm_matrix --size 64 --warmup 5 --bias matrix
tutorial $t 64_wait0_warmup0 --size 64 --schedule-wait 0 --schedule-warmup 0
tutorial $t 64_warm_fused --size 64 --warmup 5 --fused
tutorial $t 4096_cold --size 4096
if [[ $device == cuda ]]; then
  # The same warm loop recorded without CUPTI (CPU activity only): each op's box without the GPU side's cost.
  tutorial $t 64_warm_cpu_activity --size 64 --warmup 5 --activities cpu --unprofiled 200
  tutorial $t 64_warm_batched --size 64 --warmup 5 --batched
  tutorial $t 4096_warm --size 4096 --warmup 5
  tutorial $t 4096_warm_matrix --size 4096 --warmup 5 --bias matrix
  tutorial $t 4096_wait0_warmup0 --size 4096 --schedule-wait 0 --schedule-warmup 0
  tutorial $t 4096_warm_fused --size 4096 --warmup 5 --fused
  tutorial $t 4096_warm_fused_matrix --size 4096 --warmup 5 --fused --bias matrix
  run "$out/${t}_active20/4096_warm.out.txt" "$bin/$t" --device cuda --size 4096 --warmup 5 --active 20 \
    --out-dir "$out/${t}_active20"
  # 40 steps at 64 with 16 KiB CUPTI buffers (4 MiB by default): CUPTI asks for a new one every few
  # steps, and the trace shows what each request costs the loop.
  run "$out/${t}_refill/64_warm.out.txt" env TS_CUPTI_BUFFER_KIB=16 "$bin/$t" --device cuda --size 64 --warmup 5 \
    --active 40 --out-dir "$out/${t}_refill"
else
  tutorial $t 64_fused_matrix --size 64 --fused --bias matrix
fi
fi

# ---- 02: Linear ---------------------------------------------------------------------------------------
t=02_linear
if want $t; then
tutorial $t warm --warmup 5
tutorial $t warm_fused --warmup 5 --fused
if [[ $device == cuda ]]; then
  # A shape where cuBLASLt picks a split-K algorithm: two kernels for one GEMM, explained.
  tutorial $t splitk --tokens 33 --in 129 --out 65 --warmup 5
fi
fi

# ---- 03: the GeGLU MLP ---------------------------------------------------------------------------------
t=03_mlp
if ! want $t; then
  :
elif [[ $device == cuda ]]; then
  for path in eager fused merged; do tutorial $t "warm_$path" --path "$path" --warmup 5; done
  # An odd shape: the same kernels, another footprint; and one where the GEMMs go split-K.
  for path in fused merged; do
    tutorial $t "odd_$path" --path "$path" --batch 3 --seq 41 --dim 768 --hidden 1000 --warmup 5
  done
  tutorial $t splitk_merged --path merged --batch 3 --seq 77 --dim 1000 --hidden 2730 --warmup 5
else
  tutorial $t warm_merged --path merged --warmup 1
fi

fi

# ---- 03 on Hopper (cuda): the epilogue path's two kernels beside the merged path's three, and the
# ladders of the GEMM rungs under them (the wgmma kernels run on compute capability 9.0 only) ----------
if ((readings_only == 0)) && [[ $device == cuda ]] && want 03_mlp; then
  h=$out/hopper
  for path in merged epilogue; do
    run "$h/03_mlp_warm_$path.out.txt" stdbuf -oL "$bin/03_mlp" --device cuda --path "$path" --warmup 5 --out-dir "$h"
  done
fi
if ((readings_only == 0)) && [[ $device == cuda && -z $only ]]; then
  h=$out/hopper
  run "$h/ladder_mm_8192.out.txt" "$build/ts_ladder" --op mm --shape 8192,8192,8192
  run "$h/ladder_mm_4096.out.txt" "$build/ts_ladder" --op mm --shape 4096,4096,4096
  run "$h/ladder_mm_8192x6144x768.out.txt" "$build/ts_ladder" --op mm --shape 8192,6144,768
  run "$h/ladder_linear_geglu.out.txt" "$build/ts_ladder" --op linear_geglu
  # The machine code: the wgmma rung's tensor-core instructions (HGMMA) and no local memory.
  run "$h/sass.out.txt" bash -c "w=\$(find $build -name matmul_cuda_wgmma.cu.o | head -1); m=\$(find $build -name matmul_cuda_mma.cu.o | head -1);
      echo \"wgmma rung: HGMMA \$(cuobjdump -sass \$w | grep -c HGMMA), HMMA \$(cuobjdump -sass \$w | grep -c ' HMMA'), LDL/STL \$(cuobjdump -sass \$w | grep -cE ' (LDL|STL)')\";
      echo \"mma.sync rung: HMMA \$(cuobjdump -sass \$m | grep -c ' HMMA'), LDL/STL \$(cuobjdump -sass \$m | grep -cE ' (LDL|STL)')\""
fi

# ---- readings of every trace: step excerpts, kernel durations ------------------------------------------
for d in "${tutorial_dirs[@]}" hopper debugging; do [[ -d $out/$d ]] && find "$out/$d" -name '*.json'; done | sort |
  xargs -r python3 tools/trace_readings.py
if [[ -x $build/ts_trace_check ]]; then
  for d in "${tutorial_dirs[@]}" hopper; do [[ -d $out/$d ]] && find "$out/$d" -name '*.json'; done | sort | while read -r json; do
    "$build/ts_trace_check" "$json" >"${json%.json}.check.txt" 2>&1
  done
fi
if ((readings_only || hopper_only)) || [[ -n $only ]]; then
  echo "refresh_walkthroughs.sh: $failures run(s) exited non-zero; outputs in $out"
  exit $((failures > 0))
fi

if [[ $device != cuda ]]; then
  echo "refresh_walkthroughs.sh: $failures run(s) exited non-zero; outputs in $out"
  exit $((failures > 0))
fi

# ---- PyTorch's addmm on the same two shapes of C (cuda only) --------------------------------------
mkdir -p "$out/pytorch"
run "$out/pytorch/addmm_bias_row_and_matrix.out.txt" python3 - "$out/pytorch" <<'PY'
# torch.addmm(b, x, w) at N = 4096, bf16, warm, profiled like tutorial 01 (wait=1, warmup=1, active=3):
# b a bias row [N] (cuBLASLt's bias epilogue) and b a full [N, N] matrix (the series' case).
import sys
import torch
from torch.profiler import ProfilerActivity, profile, schedule
torch.backends.cuda.matmul.allow_tf32 = False
out = sys.argv[1]
print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")
N = 4096
torch.manual_seed(0)
x = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
w = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
for name, b in (("row", torch.randn(N, device="cuda", dtype=torch.bfloat16)),
                ("matrix", torch.randn(N, N, device="cuda", dtype=torch.bfloat16))):
    for _ in range(5):
        torch.addmm(b, x, w)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3)) as p:
        for _ in range(5):
            with torch.profiler.record_function("matmul_add"):
                torch.addmm(b, x, w)
            p.step()
    print(f"\n===== torch.addmm(b, x, w), x and w [{N}, {N}], b {list(b.shape)}, bf16, warm")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=20))
    p.export_chrome_trace(f"{out}/torch_addmm_{N}_{name}.json")
PY

# ---- debugging: cuda-gdb on the debug build, ncu on the dev build (cuda only) ------------------------
mkdir -p "$out/debugging"
if command -v cuda-gdb >/dev/null && [[ -x $debug_build/tutorials/01_matmul_add ]]; then
  cat >"$out/debugging/cuda_gdb_commands.txt" <<'GDB'
set pagination off
set confirm off
set breakpoint pending on
set cuda break_on_launch none
break elementwise_cuda_rows.cu:26
run
info cuda kernels
print n
print a_period
print b_period
print p
print e
cuda block thread
cuda thread (37,0,0)
print p
print e
next
next
print va
info locals
bt
delete
continue
GDB
  run "$out/debugging/cuda_gdb_session.out.txt" timeout 180 cuda-gdb -batch -x "$out/debugging/cuda_gdb_commands.txt" \
    --args "$debug_build/tutorials/01_matmul_add" --device cuda --size 64 --out-dir "$out/debugging/traces"
else
  echo "cuda-gdb or $debug_build/tutorials/01_matmul_add missing: no cuda-gdb session" | tee "$out/debugging/cuda_gdb_session.out.txt"
fi
if command -v ncu >/dev/null; then
  rep=$(mktemp -d)/geglu
  # One profiled launch of our fused GeGLU kernel, every section; the tutorial runs on under ncu.
  run "$out/debugging/ncu_03_mlp_fused.out.txt" timeout 180 ncu --clock-control none --set full --import-source yes -k regex:geglu -c 1 \
    -o "$rep" "$bin/03_mlp" --device cuda --path fused --out-dir "$out/debugging/traces"
  run "$out/debugging/ncu_geglu_details.out.txt" ncu --import "$rep.ncu-rep" --page details
  run "$out/debugging/ncu_geglu_source.out.txt" bash -c "ncu --import $rep.ncu-rep --page source --csv --print-source cuda \
    >$rep.source.csv; status=\$?; head -n 150 $rep.source.csv; exit \$status"
  # Tutorial 01 under ncu, profiling only our add kernel's speed of light.
  run "$out/debugging/ncu_01_matmul_add.out.txt" timeout 120 ncu --clock-control none --section SpeedOfLight -k regex:elementwise_binary_rows -c 1 \
    "$bin/01_matmul_add" --device cuda --size 4096 --out-dir "$out/debugging/traces"
  rm -rf "$(dirname "$rep")"
else
  echo "ncu missing: no kernel profile" | tee "$out/debugging/ncu_03_mlp_fused.out.txt"
fi
bench_section

echo "refresh_walkthroughs.sh: $failures run(s) exited non-zero; outputs in $out"
exit $((failures > 0))
