#!/usr/bin/env bash
# build_drift.sh BUILD: compiles devrun/clock_drift.cpp with ts_bench's flags and links it as ts_bench is linked
set -eu
B=$1
cd "$B"
comp=$(ninja -t commands ts_bench | grep 'ts_bench.cpp.o -c' | tail -1)
link=$(ninja -t commands ts_bench | grep -- '-o ts_bench ' | tail -1)
comp=${comp//bench\/ts_bench.cpp/devrun\/clock_drift.cpp}
link=${link//CMakeFiles\/ts_bench.dir\/bench\/bench_cuda.cu.o/}
link=${link//CMakeFiles\/ts_bench.dir\/bench\/ts_bench.cpp.o/CMakeFiles\/ts_bench.dir\/devrun\/clock_drift.cpp.o}
link=${link//-o ts_bench /-o clock_drift }
mkdir -p CMakeFiles/ts_bench.dir/devrun
eval "$comp"
eval "$link"
