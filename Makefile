# tensorscope's front door. CMake (CMakePresets.json) and Ninja do the work.
#
#   make tutorials   build, then run every tutorial (CUDA when a GPU is present, else CPU)
#   make test        build, then run the whole test suite
#   make bench       build, then run ts_bench
#   make debug       configure and build the debug preset (gdb / cuda-gdb)
#   make gpu-check OUT=dir   on a GPU machine (the H200): build for sm_90, tests, compute-sanitizer
#                    (memcheck, racecheck, synccheck), ts_bench GPU entries vs PyTorch; logs in dir
#   make sanitize    the sanitize preset (ASan + UBSan on the host code) in build/sanitize, then its
#                    test suite, every tutorial on the CPU included; any sanitizer report fails it
#   make fuzz        many more view/op fuzz cases than `make test` runs (TS_FUZZ_SEED, TS_FUZZ_CASES)
#
# Variables: PRESET=debug|dev|release|sanitize (default dev), TS_CUDA_ARCHS="90" (CMAKE_CUDA_ARCHITECTURES).

SHELL  := /bin/bash
PRESET ?= dev
BUILD  := build/$(PRESET)
CMAKE_ARGS := $(if $(TS_CUDA_ARCHS),-DCMAKE_CUDA_ARCHITECTURES="$(TS_CUDA_ARCHS)")

.PHONY: all build deps configure tutorials test bench debug clean gpu-check sanitize fuzz

all: build

deps:
	@bash tools/install_deps.sh

# Configure once (or again when CMake files change); later builds are incremental.
$(BUILD)/build.ninja: CMakeLists.txt CMakePresets.json | deps
	cmake --preset $(PRESET) $(CMAKE_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD)

tutorials: build
	@bash tutorials/run_all.sh $(BUILD)

# ctest's "100% tests passed" counts skipped tests as not failed: the last line says how many
# ran and passed, and how many were skipped (a GPU test without a GPU, HTA without PyPI).
test: build
	@cd $(BUILD) && set -o pipefail && ctest --output-on-failure 2>&1 | tee ctest.log; status=$$?; \
	  echo "tests: $$(grep -c ' Passed ' ctest.log) passed, $$(grep -c '[*]Skipped' ctest.log) skipped (not run:" \
	       "listed above), $$(grep -cE '[*](Failed|Exception|Timeout)' ctest.log) failed"; exit $$status

# CI runs this after `make test`. The sanitize suite leaves out the HTA and gdb checks (the dev
# suite runs them); its tutorials_cpu test runs every tutorial and mode on the CPU.
sanitize:
	$(MAKE) build PRESET=sanitize
	@set -o pipefail && ctest --preset sanitize 2>&1 | tee build/sanitize/ctest.log; status=$$?; \
	  echo "sanitize tests: $$(grep -c ' Passed ' build/sanitize/ctest.log) passed," \
	       "$$(grep -c '[*]Skipped' build/sanitize/ctest.log) skipped," \
	       "$$(grep -cE '[*](Failed|Exception|Timeout)' build/sanitize/ctest.log) failed"; exit $$status

# A fresh seed unless TS_FUZZ_SEED is given; it is printed first, to replay a failure.
fuzz: build
	@seed=$${TS_FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; cases=$${TS_FUZZ_CASES:-1000000}; \
	  echo "make fuzz: TS_FUZZ_SEED=$$seed TS_FUZZ_CASES=$$cases"; \
	  TS_FUZZ_SEED=$$seed TS_FUZZ_CASES=$$cases $(BUILD)/ts_hardening_tests -tc='fuzz*'

bench: build
	$(BUILD)/ts_bench

debug:
	$(MAKE) build PRESET=debug

# Its own build dir (build/gpu); see tools/gpu_check.sh. Exit status 0 when every step passed.
OUT ?= gpu-check-out
gpu-check:
	@bash tools/gpu_check.sh $(OUT)

clean:
	rm -rf build
