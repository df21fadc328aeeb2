// ops/hopper_tensor_map.cpp: TMA descriptors through the driver's cuTensorMapEncodeTiled.
//
// The function lives in the driver (libcuda), which this library does not link: a binary linked
// to it would not start on a machine without a GPU driver. The runtime hands out driver entry
// points by name once a driver is there: cudaGetDriverEntryPointByVersion from CUDA 12.5 on (it
// asks for the version of the function it was written against), cudaGetDriverEntryPoint before.
#include "ops/hopper_tensor_map.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "tensor/cuda_check.h"
#include "tensor/error.h"

namespace ts::hopper {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    TS_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
#else
    TS_CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found));
#endif
    TS_CHECK(found == cudaDriverEntryPointSuccess && p != nullptr,
             "TMA: the driver has no cuTensorMapEncodeTiled (a CUDA 12+ driver is needed)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// The descriptors this thread encoded last. The driver's answer is a function of the spec alone, so
// a hit is exact, also for a tensor made where a freed one was: at the same address, with the same
// sizes and strides, it is read through the same map, and with others it has another spec. A
// repeated call then costs a scan of kCachedMaps specs instead of a driver call; the oldest entry
// makes room for a new one.
constexpr size_t kCachedMaps = 16;
struct MapCache {
  std::array<TensorMapSpec, kCachedMaps> specs{};
  std::array<CUtensorMap, kCachedMaps> maps{};
  size_t used = 0, next = 0;  // entries filled; the one replaced next
  int64_t encodes = 0;        // the driver's encodes (the misses)
};
thread_local MapCache tl_maps;

std::string describe(const TensorMapSpec& s) {
  const auto dims = std::span(s.dims).first(static_cast<size_t>(s.rank));
  const auto strides = std::span(s.strides).first(static_cast<size_t>(s.rank - 1));
  const auto box = std::span(s.box).first(static_cast<size_t>(s.rank));
  return fmt::format("{}: cuTensorMapEncodeTiled refused a 16-bit tensor of sizes [{}], strides [{}] bytes, box [{}] "
                     "(innermost dim first; at {}; {}-byte swizzle)",
                     s.what, fmt::join(dims, ", "), fmt::join(strides, ", "), fmt::join(box, ", "), s.base,
                     s.swizzle_bytes);
}

}  // namespace

const cuda::DeviceProperties& properties(int index) {
  // Every launch asks: this thread's last answer first, without the lock (the map's entries never move).
  thread_local int last_index = -1;
  thread_local const cuda::DeviceProperties* last = nullptr;
  if (index == last_index) return *last;
  static std::mutex mutex;
  static std::map<int, cuda::DeviceProperties> known;
  const std::lock_guard lock(mutex);
  auto it = known.find(index);
  if (it == known.end()) it = known.emplace(index, cuda::device_properties(index)).first;
  last_index = index;
  last = &it->second;
  return it->second;
}

TensorMapSpec tensor_map_spec_16bit(const void* base, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                                    int64_t batch_stride, int box_rows, int box_cols, const char* what) {
  TensorMapSpec s{.base = base, .what = what, .rank = 3};
  s.dims = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), static_cast<uint64_t>(batch), 0};
  const int64_t batch_bytes = batch > 1 ? batch_stride * 2 : row_stride * 2 * rows;
  s.strides = {static_cast<uint64_t>(row_stride * 2), static_cast<uint64_t>(batch_bytes), 0};
  s.box = {static_cast<uint32_t>(box_cols), static_cast<uint32_t>(box_rows), 1, 0};
  return s;
}

TensorMapSpec tensor_map_spec_16bit_4d(const void* base, int64_t batch, int64_t heads, int64_t rows, int64_t cols,
                                       int64_t batch_stride, int64_t head_stride, int64_t row_stride, int box_rows,
                                       int box_cols, const char* what) {
  TensorMapSpec s{.base = base, .what = what, .rank = 4};
  s.dims = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), static_cast<uint64_t>(heads),
            static_cast<uint64_t>(batch)};
  const int64_t head_bytes = heads > 1 ? head_stride * 2 : row_stride * 2 * rows;
  const int64_t batch_bytes = batch > 1 ? batch_stride * 2 : head_bytes * heads;
  s.strides = {static_cast<uint64_t>(row_stride * 2), static_cast<uint64_t>(head_bytes),
               static_cast<uint64_t>(batch_bytes)};
  s.box = {static_cast<uint32_t>(box_cols), static_cast<uint32_t>(box_rows), 1, 1};
  return s;
}

CUtensorMap make_tensor_map(const TensorMapSpec& spec) {
  TS_CHECK(spec.rank >= 2 && spec.rank <= 4, "{}: a tensor map of rank {} (2 to 4 here)", spec.what, spec.rank);
  TS_CHECK(spec.swizzle_bytes == 128 || spec.swizzle_bytes == 64, "{}: a swizzle of {} bytes (128 or 64 here)",
           spec.what, spec.swizzle_bytes);
  MapCache& cache = tl_maps;
  for (size_t i = 0; i < cache.used; ++i)
    if (cache.specs[i] == spec) return cache.maps[i];

  CUtensorMap map{};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, static_cast<cuuint32_t>(spec.rank),
                                    const_cast<void*>(spec.base), spec.dims.data(), spec.strides.data(),
                                    spec.box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    spec.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TS_CHECK(r == CUDA_SUCCESS, "{}: CUresult {}", describe(spec), static_cast<int>(r));
  ++cache.encodes;
  cache.specs[cache.next] = spec;
  cache.maps[cache.next] = map;
  cache.used = std::max(cache.used, cache.next + 1);
  cache.next = (cache.next + 1) % kCachedMaps;
  return map;
}

int64_t tensor_map_encodes() { return tl_maps.encodes; }

}  // namespace ts::hopper
