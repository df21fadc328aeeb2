#!/usr/bin/env bash
# device run: old (6dad240) vs new, sm_90 builds; dispatch bench alternating; clock-order loop; torch comparison
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
NVCC=/usr/local/cuda/bin/nvcc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >> $OUT/machine.txt 2>&1
cmake -S old-src -B build/h-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$NVCC -DCMAKE_CUDA_FLAGS=-lineinfo > $OUT/build-old.log 2>&1
cmake -S . -B build/h-new -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=$NVCC -DCMAKE_CUDA_FLAGS=-lineinfo > $OUT/build-new.log 2>&1
(cmake --build build/h-old -j8 --target ts_bench ts_tests >> $OUT/build-old.log 2>&1; echo "old build rc=$? at $(el) s" >> $OUT/machine.txt) &
(cmake --build build/h-new -j8 --target ts_bench ts_tests >> $OUT/build-new.log 2>&1; echo "new build rc=$? at $(el) s" >> $OUT/machine.txt) &
wait
tail -c 3000 $OUT/build-old.log > $OUT/build-old.tail; tail -c 3000 $OUT/build-new.log > $OUT/build-new.tail; rm $OUT/build-old.log $OUT/build-new.log
echo "builds done at $(el) s" >> $OUT/machine.txt
# 1. dispatch, alternating, same machine, same run
for r in 1 2 3 4 5; do
  for b in old new; do
    echo "== round $r $b" >> $OUT/dispatch.log
    build/h-$b/ts_bench --filter dispatch --json $OUT/dispatch-$b.jsonl >> $OUT/dispatch.log 2>&1
  done
done
echo "dispatch done at $(el) s" >> $OUT/machine.txt
# 2. clock order: per process, the kernel-start minus launch-start deltas of the 10-add test, and the 100k test's violations
mkdir -p /tmp/clock
r=0
while (( $(el) < 470 && r < 20 )); do
  r=$((r+1))
  for b in old new; do
    build/h-$b/ts_tests -tc='profiler cuda: ts::add launches one kernel*,profiler cuda: 100,000 launches*' -s > /tmp/clock/$b-$r.log 2>&1
    echo "$b $r rc=$?" >> /tmp/clock/rc.txt
  done
done
python3 devrun/clock_summary.py /tmp/clock > $OUT/clock.txt 2>&1
echo "clock loop done at $(el) s ($r rounds)" >> $OUT/machine.txt
# 3. PyTorch on the same machine: kernels before their launch in Kineto's traces
for i in 1 2 3 4 5 6; do
  (( $(el) < 570 )) || break
  python3 devrun/torch_clock.py 5000 /tmp/torch_$i.json >> $OUT/torch_clock.txt 2>&1
done
echo "all done at $(el) s" >> $OUT/machine.txt
tar -czf $OUT/clock-logs.tgz -C /tmp clock
