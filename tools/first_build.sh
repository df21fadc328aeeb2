#!/usr/bin/env bash
# tools/first_build.sh OUT_FILE [KEEP_DIR]: a learner's first hour, timed. A fresh clone of this
# checkout's HEAD (with TS_FIRST_BUILD_FROM=copy, or where there is no .git: a copy of the working
# tree, build/ and traces/ left out), in a scratch folder (KEEP_DIR, kept, when given), then
#   1. `make tutorials`, every line it prints stamped with the seconds since it started: when the
#      tutorials are built and the first run starts, when the last run ends;
#   2. `make build`, the rest (tests, benchmarks, ladder, trace tools);
#   3. the sizes: each tutorial binary, the library, the build folder.
# OUT_FILE gets the summary, then make tutorials' stamped output. The clone builds what its
# machine gets by default: the visible GPU's architecture, or the portable set without one.
set -euo pipefail
out=${1:?usage: tools/first_build.sh OUT_FILE}
out=$(realpath -m "$out")
src=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n ${2:-} ]]; then
  scratch=$(realpath -m "$2")
  rm -rf "$scratch" && mkdir -p "$scratch"
else
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
fi
if [[ -d $src/.git && ${TS_FIRST_BUILD_FROM:-clone} == clone ]]; then
  git clone -q "$src" "$scratch/tensorscope"
  commit=$(git -C "$scratch/tensorscope" rev-parse --short HEAD)
else
  mkdir "$scratch/tensorscope"
  tar -C "$src" --exclude=./build --exclude=./traces --exclude=./.git -cf - . | tar -C "$scratch/tensorscope" -xf -
  commit="(a copy of the working tree)"
fi
cd "$scratch/tensorscope"

stamp() { python3 -u -c '
import sys, time
t0 = time.monotonic()
for line in sys.stdin:
    sys.stdout.write(f"{time.monotonic() - t0:7.1f}s  {line}")
'; }
t0=$SECONDS
set +e
make tutorials 2>&1 | stamp >"$scratch/tutorials.log"
status=${PIPESTATUS[0]}
set -e
tutorials_s=$((SECONDS - t0))
first_run=$(grep -m1 '== tutorial run 1 of' "$scratch/tutorials.log" | awk '{print $1}' || true)
t1=$SECONDS
set +e
make build >"$scratch/build.log" 2>&1
build_status=$?
set -e
rest_s=$((SECONDS - t1))

{
  echo "# A fresh clone's first make tutorials, then make build, at commit $commit"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)"
  echo "CUDA architectures: $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' build/dev/CMakeCache.txt)"
  echo
  echo "make tutorials: exit $status, ${tutorials_s} s in all; the first tutorial run started at ${first_run}"
  echo "make build (the rest, after it): exit $build_status, ${rest_s} s"
  echo
  echo "## sizes"
  for t in build/dev/tutorials/*_*; do
    echo "$(du -m --apparent-size "$t" | cut -f1) MB  $t"
  done
  echo "$(du -m --apparent-size build/dev/libtensorscope.a | cut -f1) MB  build/dev/libtensorscope.a"
  echo "$(du -sm build/dev | cut -f1) MB  build/dev, everything built"
  echo
  echo "## what each build step cost (tools/build_times.py build/dev)"
  python3 tools/build_times.py build/dev || true
  echo
  echo "## make tutorials, each line stamped with the seconds since it started"
  cat "$scratch/tutorials.log"
} >"$out"
echo "first_build.sh: wrote $out"
((build_status == 0)) || { tail -30 "$scratch/build.log"; exit "$build_status"; }
exit "$status"
