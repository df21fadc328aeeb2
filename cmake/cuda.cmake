# cmake/cuda.cmake: is there a CUDA toolkit, and which GPUs does this build carry code for.
#
# Included by CMakeLists.txt right after project(). It sets:
#   TS_HAVE_CUDA              ON when the CUDA backend is built (CUDA is then a language of the build)
#   CMAKE_CUDA_ARCHITECTURES  (cached) the GPUs the kernels are compiled for, chosen as below
#   TS_CUDA_SM90A             ON when the Hopper kernels (wgmma, setmaxnreg, TMA) are built for sm_90a
#
# TS_CUDA=AUTO (the default) builds the CUDA backend when nvcc is found (on PATH, $CUDACXX,
# /usr/local/cuda/bin), and the CPU runtime alone otherwise; ON requires it; OFF leaves it out.
#
# Architectures, unless -DCMAKE_CUDA_ARCHITECTURES=... names them (or a previous configure cached
# a choice; pass the option again to change it):
#   - the GPUs visible now (nvidia-smi): machine code for each of their compute capabilities,
#     plus its PTX ("native" asks for this and fails when no GPU is visible);
#   - no GPU visible: the portable set ("portable" asks for it anyway), machine code for every
#     common generation from Turing on and PTX for the newest, which the driver compiles for a GPU
#     newer than the toolkit.
# The oldest toolkit: CUDA 12.4, the oldest whose nvcc compiled every .cu file here
# (tools/cuda_toolkit_check.sh); README.md ("Toolkits") says what newer ones add and where it is guarded.

set(TS_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON (required) or OFF (CPU only)")
set_property(CACHE TS_CUDA PROPERTY STRINGS AUTO ON OFF)
set(TS_CUDA_MIN_VERSION 12.4)

set(TS_HAVE_CUDA OFF)
if(NOT TS_CUDA STREQUAL "OFF")
  # CMake looks for nvcc on PATH (or where $CUDACXX says); the toolkit's usual home,
  # /usr/local/cuda, is often not on PATH: asked second. check_language compiles a test program,
  # so an nvcc that does not run (a wrapper left behind) counts as none.
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND "$ENV{CUDACXX}" STREQUAL "" AND EXISTS /usr/local/cuda/bin/nvcc)
    unset(CMAKE_CUDA_COMPILER CACHE)
    set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
    check_language(CUDA)
  endif()
  if(CMAKE_CUDA_COMPILER)
    set(TS_HAVE_CUDA ON)
  elseif(TS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "tensorscope: TS_CUDA=ON, but no CUDA compiler (nvcc) was found: install the CUDA toolkit "
                        "${TS_CUDA_MIN_VERSION} or newer, put its bin/ on PATH (or set CUDACXX), or configure with "
                        "-DTS_CUDA=AUTO for a CPU-only build")
  endif()
endif()

if(NOT TS_HAVE_CUDA AND TS_CUDA STREQUAL "OFF")
  message(STATUS "tensorscope: TS_CUDA=OFF: building the CPU runtime only (the CUDA rungs, CUPTI and the GPU tests "
                 "are left out)")
  return()
elseif(NOT TS_HAVE_CUDA)
  message(STATUS "tensorscope: no CUDA toolkit (nvcc) found: building the CPU runtime only. Every tutorial and test "
                 "runs on the CPU; the CUDA rungs, CUPTI and the GPU tests are left out (the GPU tests report "
                 "themselves skipped). Install the CUDA toolkit ${TS_CUDA_MIN_VERSION}+ and configure again for a GPU.")
  return()
endif()

# ---- the toolkit's version, before CUDA is enabled (the architectures depend on it) ---------------
execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --version OUTPUT_VARIABLE ts_nvcc_version_text
                RESULT_VARIABLE ts_nvcc_rc)
string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" ts_match "${ts_nvcc_version_text}")
set(TS_CUDA_VERSION "${CMAKE_MATCH_1}")
if(NOT ts_nvcc_rc EQUAL 0 OR TS_CUDA_VERSION STREQUAL "")
  message(FATAL_ERROR "tensorscope: cannot read the version of ${CMAKE_CUDA_COMPILER} (nvcc --version)")
endif()
if(TS_CUDA_VERSION VERSION_LESS TS_CUDA_MIN_VERSION)
  message(FATAL_ERROR "tensorscope needs the CUDA toolkit ${TS_CUDA_MIN_VERSION} or newer; ${CMAKE_CUDA_COMPILER} is "
                      "${TS_CUDA_VERSION}. Install a newer toolkit, or configure with -DTS_CUDA=OFF for the CPU "
                      "runtime alone.")
endif()

# The newest architecture this toolkit compiles for, and the portable set it can build.
if(TS_CUDA_VERSION VERSION_GREATER_EQUAL 12.8)
  set(ts_newest 120)
  set(ts_portable 75-real 80-real 86-real 89-real 90-real 100-real 120-real 120-virtual)
else()
  set(ts_newest 90)
  set(ts_portable 75-real 80-real 86-real 89-real 90-real 90-virtual)
endif()

# ---- the architectures -------------------------------------------------------------------------
if(CMAKE_CUDA_ARCHITECTURES STREQUAL "portable")
  set(CMAKE_CUDA_ARCHITECTURES "${ts_portable}" CACHE STRING "CUDA architectures (tensorscope: the portable set)" FORCE)
  message(STATUS "tensorscope: CUDA ${TS_CUDA_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES} (the portable set)")
elseif(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "native")
  set(ts_gpus "")
  find_program(TS_NVIDIA_SMI nvidia-smi NO_CACHE)
  if(TS_NVIDIA_SMI)
    execute_process(COMMAND "${TS_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE ts_caps RESULT_VARIABLE ts_smi_rc ERROR_QUIET)
    if(ts_smi_rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]" ts_caps "${ts_caps}")
      foreach(cap ${ts_caps})
        string(REPLACE "." "" arch "${cap}")
        if(arch GREATER ts_newest)  # a GPU newer than the toolkit: its PTX, which the driver compiles
          message(WARNING "tensorscope: a GPU of compute capability ${cap} is newer than CUDA ${TS_CUDA_VERSION} "
                          "compiles for; building compute_${ts_newest} PTX for it (a newer toolkit builds machine code)")
          set(arch "${ts_newest}-virtual")
        endif()
        list(APPEND ts_gpus ${arch})
      endforeach()
      list(REMOVE_DUPLICATES ts_gpus)
    endif()
  endif()
  if(ts_gpus)
    set(ts_why "the GPUs nvidia-smi saw at configure time")
    set(ts_archs ${ts_gpus})
  elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "native")
    message(FATAL_ERROR "tensorscope: CMAKE_CUDA_ARCHITECTURES=native asks for the GPUs of this machine, and "
                        "nvidia-smi shows none; name them (e.g. -DCMAKE_CUDA_ARCHITECTURES=86) or leave the option "
                        "out for the portable set")
  else()
    set(ts_why "no GPU visible at configure time: the portable set")
    set(ts_archs ${ts_portable})
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${ts_archs}" CACHE STRING "CUDA architectures (tensorscope: ${ts_why})" FORCE)
  message(STATUS "tensorscope: CUDA ${TS_CUDA_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES} (${ts_why})")
else()
  message(STATUS "tensorscope: CUDA ${TS_CUDA_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES} (as given)")
endif()

# The Hopper kernels' own target, sm_90a, runs on compute capability 9.0 alone: built when the
# architectures include 9.0 in any form (machine code or PTX), left as traps otherwise.
set(TS_CUDA_SM90A OFF)
foreach(arch ${CMAKE_CUDA_ARCHITECTURES})
  if(arch MATCHES "^90" OR arch STREQUAL "all" OR arch STREQUAL "all-major")
    set(TS_CUDA_SM90A ON)
  endif()
endforeach()

enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
set(TS_HAVE_CUDA ON)
