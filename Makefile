# tensorscope's front door. CMake (CMakePresets.json) and Ninja do the work.
#
#   make tutorials   build, then run every tutorial (CUDA when a GPU is present, else CPU)
#   make test        build, then run the whole test suite
#   make bench       build, then run ts_bench
#   make debug       configure and build the debug preset (gdb / cuda-gdb)
#   make gpu-check OUT=dir   on a GPU machine (the H200): build for sm_90, tests, compute-sanitizer
#                    (memcheck, racecheck, synccheck), ts_bench GPU entries vs PyTorch; logs in dir
#
# Variables: PRESET=debug|dev|release (default dev), TS_CUDA_ARCHS="90" (CMAKE_CUDA_ARCHITECTURES).

PRESET ?= dev
BUILD  := build/$(PRESET)
CMAKE_ARGS := $(if $(TS_CUDA_ARCHS),-DCMAKE_CUDA_ARCHITECTURES="$(TS_CUDA_ARCHS)")

.PHONY: all build deps configure tutorials test bench debug clean gpu-check

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

test: build
	cd $(BUILD) && ctest --output-on-failure

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
