#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
NVCC=/usr/local/cuda/bin/nvcc
if [[ ! -x build/h-new/ts_tests ]]; then
  [[ -f build/h-new/build.ninja ]] || cmake -S . -B build/h-new -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=$NVCC -DCMAKE_CUDA_FLAGS=-lineinfo > /tmp/build.log 2>&1
  cmake --build build/h-new -j16 --target ts_tests 00_tensors_and_views >> /tmp/build.log 2>&1 || { tail -50 /tmp/build.log; exit 1; }
fi
echo "built at $(el) s" >> $OUT/d.txt
P='profiler cuda: ts::add launches*,profiler cuda: 100,000*'
one() {  # NAME FILTER
  build/h-new/ts_tests -tc="$2" > /tmp/d.log 2>&1; local rc=$?
  echo "$1 rc=$rc at $(el) s: $(grep -a 'test cases:' /tmp/d.log | tail -1 | tr -s ' ') | violations: $(grep -a -A1 'launch_order_violations == 0 ) is NOT' /tmp/d.log | grep -ao 'CHECK( [0-9]* ==' | tr -d 'CHECK(= ' | tr '\n' ' ')" >> $OUT/d.txt
}
for r in 1 2 3 4 5; do
  (( $(el) < 420 )) || break
  one "children-first" "cuda: a TS_DEVICE_CAPABILITY*,$P"
  one "control       " "$P"
done
(( $(el) < 440 )) && one "target+forced " "cuda: device target*,cuda: a rung forced*,$P"
(( $(el) < 460 )) && one "target+forced " "cuda: device target*,cuda: a rung forced*,$P"
echo "done at $(el) s" >> $OUT/d.txt
