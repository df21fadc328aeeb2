# tensorscope's front door. CMake (CMakePresets.json) and Ninja do the work.
#
#   make tutorials   build the tutorials, then run each (CUDA when a GPU is present, else CPU)
#   make test        build, then run the whole test suite
#   make bench       build, then run ts_bench
#   make debug       configure and build the debug preset (gdb / cuda-gdb)
#   make gpu-check OUT=dir [STEPS="build tests"]   on a GPU machine (the H200), step by step or all:
#                    build, tests, fuzz, compute-sanitizer (memcheck, racecheck, synccheck), bench vs
#                    PyTorch, profiler, emulated 8.0 and 7.5, a PTX-only build, a build with no code
#                    for the GPU; logs and summary.txt in dir (tools/gpu_check.sh says what each does)
#   make sanitize    the sanitize preset (ASan + UBSan, a CPU-only build) in build/sanitize, then its
#                    test suite, every tutorial on the CPU included; any sanitizer report fails it
#   make tsan        the tsan preset (ThreadSanitizer on the host code, CPU only) in build/tsan, then
#                    the thread and profiler-misuse cases of ts_hardening_tests; any race report fails it
#   make fuzz        many more view/op fuzz cases than `make test` runs (TS_FUZZ_SEED, TS_FUZZ_CASES)
#
# Variables: PRESET=debug|dev|release|sanitize|tsan (default dev); TS_CUDA_ARCHS=86 (CMAKE_CUDA_ARCHITECTURES:
# by default the GPUs visible at configure time, or the portable set when none is; also native,
# portable or a list such as "80;90"); TS_CUDA=OFF (a CPU-only build, even where nvcc is found).

SHELL  := /bin/bash
# Measured from a fresh clone (tools/first_build.sh; README.md, "Quick start", cites the runs).
FIRST_BUILD_HINT := 5 minutes on 2 cores without a GPU, 75 s on 16 cores with one
PRESET ?= dev
BUILD  := build/$(PRESET)
CMAKE_ARGS := $(if $(TS_CUDA_ARCHS),-DCMAKE_CUDA_ARCHITECTURES="$(TS_CUDA_ARCHS)") $(if $(TS_CUDA),-DTS_CUDA=$(TS_CUDA))

.PHONY: all build deps configure tutorials test bench debug clean gpu-check sanitize tsan fuzz

all: build

deps:
	@bash tools/install_deps.sh

# Configure once, and again when TS_CUDA_ARCHS or TS_CUDA asks for a change; after that the build
# re-runs CMake by itself when a CMake file changes, and builds incrementally.
configure: deps
	@if [[ ! -f $(BUILD)/build.ninja || -n "$(TS_CUDA_ARCHS)$(TS_CUDA)" ]]; then cmake --preset $(PRESET) $(CMAKE_ARGS); fi

build: configure
	cmake --build $(BUILD)

# The tutorials alone first (the tests, benchmarks and ladder build on `make test` or `make build`),
# then every run, each announced before it starts.
tutorials: configure
	@echo "make tutorials: building the seven tutorials in $(BUILD) (a first build: about $(FIRST_BUILD_HINT))"
	cmake --build $(BUILD) --target tutorials
	@bash tutorials/run_all.sh $(BUILD)

# ctest's "100% tests passed" counts skipped tests as not failed: tools/test_summary.py prints
# why each skipped test was skipped (a GPU test without a GPU, HTA without PyPI), grouped by
# reason, then one line counting what passed, was skipped and failed.
test: build
	@cd $(BUILD) && set -o pipefail && ctest --output-on-failure 2>&1 | tee ctest.log; status=$$?; \
	  python3 $(CURDIR)/tools/test_summary.py ctest.log Testing/Temporary/LastTest.log || status=1; exit $$status

# The CPU runtime alone (without a GPU the CUDA host code never runs; on one, compute-sanitizer
# checks it: make gpu-check). The sanitize suite leaves out the HTA and gdb checks (the dev suite
# runs them); its tutorials_cpu test runs every tutorial and mode on the CPU. CI builds the same
# preset with the CUDA toolkit hidden (tools/cpu_only_check.sh --sanitize).
sanitize:
	$(MAKE) build PRESET=sanitize
	@set -o pipefail && ctest --preset sanitize 2>&1 | tee build/sanitize/ctest.log; status=$$?; \
	  python3 tools/test_summary.py build/sanitize/ctest.log build/sanitize/Testing/Temporary/LastTest.log \
	    --label "sanitize tests" || status=1; exit $$status

# The cases that run ops, overrides and the profiler from several threads at once (and the
# profiler's misuse cases), built with ThreadSanitizer: a race report ends the run with status 86.
# CI runs it after the CPU-only check.
tsan:
	$(MAKE) configure PRESET=tsan
	cmake --build build/tsan --target ts_hardening_tests
	build/tsan/ts_hardening_tests -tc='threads*,profiler misuse*,profiler guards*,profiler record_shapes*'

# A fresh seed unless TS_FUZZ_SEED is given; it is printed first, to replay a failure.
fuzz: build
	@seed=$${TS_FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; cases=$${TS_FUZZ_CASES:-1000000}; \
	  echo "make fuzz: TS_FUZZ_SEED=$$seed TS_FUZZ_CASES=$$cases"; \
	  TS_FUZZ_SEED=$$seed TS_FUZZ_CASES=$$cases $(BUILD)/ts_hardening_tests -tc='fuzz*'

bench: build
	$(BUILD)/ts_bench

debug:
	$(MAKE) build PRESET=debug

# Its own build dirs (build/gpu*); see tools/gpu_check.sh. Exit status 0 when every step passed.
OUT ?= gpu-check-out
gpu-check:
	@bash tools/gpu_check.sh $(OUT) $(STEPS)

clean:
	rm -rf build
