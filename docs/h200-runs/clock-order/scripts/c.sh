#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
NVCC=/usr/local/cuda/bin/nvcc
if [[ ! -x build/h-new/ts_bench ]]; then
  cmake -S . -B build/h-new -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=$NVCC -DCMAKE_CUDA_FLAGS=-lineinfo > /tmp/build.log 2>&1
  cmake --build build/h-new -j16 --target ts_bench >> /tmp/build.log 2>&1 || { tail -50 /tmp/build.log; exit 1; }
fi
bash devrun/build_drift.sh build/h-new > /tmp/drift-build.log 2>&1 || { tail -30 /tmp/drift-build.log; exit 1; }
echo "built at $(el) s" | tee -a $OUT/drift.txt
build/h-new/clock_drift idle 45 5 >> $OUT/drift.txt 2>&1
build/h-new/clock_drift busy 45 5 >> $OUT/drift.txt 2>&1
build/h-new/clock_drift late-busy 40 5 >> $OUT/drift.txt 2>&1
build/h-new/clock_drift late-idle 40 5 >> $OUT/drift.txt 2>&1
echo "drift done at $(el) s" >> $OUT/drift.txt
python3 devrun/torch_clock.py 5000 /tmp/t1.json 40 >> $OUT/drift.txt 2>&1
echo "all done at $(el) s" >> $OUT/drift.txt
