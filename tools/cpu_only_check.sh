#!/usr/bin/env bash
# tools/cpu_only_check.sh [--sanitize] [BUILD]: tensorscope as a learner without the CUDA toolkit gets it.
#
# The toolkit is hidden first: in a mount namespace of this command's own (unshare -m), an empty
# tmpfs covers every /usr/local/cuda* folder, and /dev/null covers any other nvcc on PATH. Then, in
# BUILD (build/cpu-only; with --sanitize, build/sanitize):
#   1. configure: CMake must find no CUDA compiler and say it builds the CPU runtime alone;
#      --sanitize configures the sanitize preset (ASan + UBSan), its TS_CUDA=OFF put back to AUTO
#      so that CMake still looks for nvcc and finds none;
#   2. build everything;
#   3. ctest: the CPU suite passes, every tutorial in every mode on the CPU included (its
#      tutorials_cpu test), and the GPU tests report themselves skipped; the HTA and gdb checks are
#      left to the default build, which runs them. With --sanitize any sanitizer report fails it.
# CI runs it with --sanitize after make test: one build that is both the CPU-only check and the
# sanitize suite. Exit status 0 when every step passed.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")  # what the re-run below must see again, --sanitize included
SANITIZE=0
if [[ ${1:-} == --sanitize ]]; then
  SANITIZE=1
  shift
fi
BUILD=${1:-build/cpu-only}
if ((SANITIZE)); then BUILD=${1:-build/sanitize}; fi

if [[ ${TS_TOOLKIT_HIDDEN:-} != 1 ]]; then
  # Re-run this script with the toolkit out of sight (root, or a user namespace that maps to it).
  export TS_TOOLKIT_HIDDEN=1
  exec unshare --mount ${TS_UNSHARE_USER:+--map-root-user} bash "$0" "${args[@]}"
fi

for dir in /usr/local/cuda*; do
  if [[ -d $dir && ! -L $dir ]]; then mount -t tmpfs -o size=1m tensorscope-no-cuda "$dir"; fi
done
# An nvcc elsewhere on PATH (a wrapper script, a distribution's package): nothing that runs.
while read -r nvcc; do
  mount --bind /dev/null "$nvcc"
done < <(type -ap nvcc)
unset CUDACXX CUDA_PATH CUDAToolkit_ROOT
if nvcc --version >/dev/null 2>&1 || [[ -e /usr/local/cuda/bin/nvcc ]]; then
  echo "cpu_only_check.sh: an nvcc still runs ($(type -p nvcc || echo /usr/local/cuda/bin/nvcc))" >&2
  exit 1
fi
echo "== the CUDA toolkit is hidden: /usr/local/cuda* empty, no nvcc that runs"

echo "== configure $BUILD"
rm -rf "$BUILD"
mkdir -p "$(dirname "$BUILD")"
if ((SANITIZE)); then
  cmake --preset sanitize -B "$BUILD" -DTS_CUDA=AUTO | tee "$BUILD.configure.log"
  label="cpu-only sanitize tests" passed="the CPU-only build passed under ASan + UBSan"
else
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo | tee "$BUILD.configure.log"
  label="cpu-only tests" passed="the CPU-only build passed"
fi
grep -q 'no CUDA toolkit (nvcc) found: building the CPU runtime only' "$BUILD.configure.log" || {
  echo "cpu_only_check.sh: CMake did not say it builds the CPU runtime alone" >&2
  exit 1
}
rm -f "$BUILD.configure.log"

echo "== build"
cmake --build "$BUILD"

echo "== ctest (the CPU suite; GPU tests report themselves skipped)"
(cd "$BUILD" && set -o pipefail && ctest --output-on-failure -E 'hta|gdb_walkthrough' 2>&1 | tee ctest.log)
python3 tools/test_summary.py "$BUILD/ctest.log" "$BUILD/Testing/Temporary/LastTest.log" --label "$label"
echo "cpu_only_check.sh: $passed"
