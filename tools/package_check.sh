#!/usr/bin/env bash
# tools/package_check.sh [BUILD] [--skip-subdirectory]: tensorscope used from a project of one's own,
# the three ways README.md ("Use it in your own project") shows. BUILD (build/dev) must be built.
#
#   1. installed: `cmake --install BUILD` into a scratch prefix; examples/profile_three_ops
#      configured against that prefix alone (CMAKE_PREFIX_PATH; the package must come from there,
#      not from the build tree), built, run; its trace checked by the installed ts_trace_check;
#   2. one g++ line with pkg-config (the installed tensorscope.pc), the same example, run;
#   3. the build tree as a package (-Dtensorscope_DIR=BUILD), built and run;
#   4. add_subdirectory of this checkout from a scratch project that names no build type: the
#      library must build optimized (-O2 on its files) and its table carry no "built without
#      optimization" line. This one builds the library again, CPU-only to keep it short (a few
#      minutes on 2 cores); --skip-subdirectory leaves it out.
# On a machine with a GPU the example runs on it (and its trace has kernels). Scratch files go to
# a temporary folder, removed at the end. Exit status 0 when every step passed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=build/dev
subdirectory=1
for arg in "$@"; do
  case $arg in
    --skip-subdirectory) subdirectory=0 ;;
    -*) echo "package_check.sh: unknown option '$arg' (see the header of $0)" >&2; exit 2 ;;
    *) build=$arg ;;
  esac
done
[[ -f $build/libtensorscope.a ]] || { echo "package_check.sh: $build/libtensorscope.a is not built (make build)" >&2; exit 2; }
build=$(cd "$build" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
step() { echo; echo "== $*"; }
fail() { echo "package_check.sh: FAIL: $*" >&2; exit 1; }
# A command whose output matters only when it fails.
quietly() {
  local log=$scratch/quietly.log
  "$@" >"$log" 2>&1 || { cat "$log"; fail "$*"; }
}

# A run of the example: its table printed, its trace written and checked.
run_example() {  # BINARY TRACE TRACE_CHECK
  "$1" "$2" | tee "$2.out"
  grep -q 'Self CPU time total' "$2.out" || fail "$1 printed no profiler table"
  grep -q 'ts::matmul' "$2.out" || fail "$1's table has no ts::matmul row"
  if grep -q '^Build: ' "$2.out"; then fail "$1's library was built without optimization"; fi
  "$3" "$2"
}

step "1. cmake --install $build, then examples/profile_three_ops against the installed copy"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log"
for f in lib/libtensorscope.a include/tensorscope/ops/ops.h include/tensorscope/profiler/profiler.h \
         lib/cmake/tensorscope/tensorscopeConfig.cmake lib/pkgconfig/tensorscope.pc bin/ts_trace_check; do
  [[ -e $prefix/$f ]] || fail "the install has no $f"
done
echo "installed into $prefix: $(find "$prefix" -type f | wc -l) files"
cmake -S examples/profile_three_ops -B "$scratch/example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/example.log" ||
  { cat "$scratch/example.log"; fail "configuring the example against $prefix"; }
found=$(sed -n 's/^tensorscope_DIR:PATH=//p' "$scratch/example/CMakeCache.txt")
[[ $found == "$prefix"/* ]] || fail "find_package(tensorscope) found '$found', not the install in $prefix"
echo "find_package(tensorscope): $found"
quietly cmake --build "$scratch/example"
run_example "$scratch/example/profile_three_ops" "$scratch/installed.json" "$prefix/bin/ts_trace_check"

step "2. one g++ line: g++ main.cpp \$(pkg-config --cflags --libs tensorscope)"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
echo "pkg-config --libs tensorscope: $(pkg-config --libs tensorscope)"
# shellcheck disable=SC2046
g++ -O2 examples/profile_three_ops/main.cpp $(pkg-config --cflags --libs tensorscope) -o "$scratch/one_line"
run_example "$scratch/one_line" "$scratch/one_line.json" "$prefix/bin/ts_trace_check"
unset PKG_CONFIG_PATH

step "3. the build tree as a package: -Dtensorscope_DIR=$build"
quietly cmake -S examples/profile_three_ops -B "$scratch/from_build" -G Ninja -Dtensorscope_DIR="$build"
quietly cmake --build "$scratch/from_build"
run_example "$scratch/from_build/profile_three_ops" "$scratch/from_build.json" "$build/ts_trace_check"

if ((subdirectory)); then
  step "4. add_subdirectory($src) from a project that names no build type (CPU-only library)"
  mkdir -p "$scratch/subdirectory"
  cat >"$scratch/subdirectory/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.24)
project(uses_tensorscope LANGUAGES CXX)
set(TS_CUDA OFF CACHE STRING "")
add_subdirectory($src tensorscope)
add_executable(profile_three_ops $src/examples/profile_three_ops/main.cpp)
target_link_libraries(profile_three_ops PRIVATE tensorscope::tensorscope)
CMAKE
  cmake -S "$scratch/subdirectory" -B "$scratch/subdirectory/build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON | tee "$scratch/subdirectory.log" | grep tensorscope || true
  grep -q 'building the tensorscope library with -O2' "$scratch/subdirectory.log" || fail "no message about the library's -O2"
  t0=$SECONDS
  quietly cmake --build "$scratch/subdirectory/build"
  echo "built in $((SECONDS - t0)) s"
  python3 - "$scratch/subdirectory/build/compile_commands.json" <<'PY' || fail "the library's files were not compiled with -O2"
import json, sys
commands = json.load(open(sys.argv[1]))
lib = [c for c in commands if "/ops/" in c["file"] or "/profiler/" in c["file"] or "/tensor/" in c["file"]]
unoptimized = [c["file"] for c in lib if " -O2" not in c["command"]]
print(f"{len(lib)} library files compiled, {len(unoptimized)} without -O2")
sys.exit(1 if not lib or unoptimized else 0)
PY
  # No trace checker in this build (a project of one's own builds the library alone): the installed one checks.
  run_example "$scratch/subdirectory/build/profile_three_ops" "$scratch/subdirectory.json" "$prefix/bin/ts_trace_check"
  [[ ! -e $scratch/subdirectory/build/tensorscope/tutorials ]] || fail "add_subdirectory built the tutorials too"
fi
echo
echo "package_check.sh: every step passed"
