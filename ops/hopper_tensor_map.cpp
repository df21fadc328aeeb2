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

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
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

// What a descriptor is made of, beyond what encode_16bit fixes (the element type, unit element
// strides, no interleave, the 128-byte swizzle, the L2 promotion, no NaN fill): the base address,
// and per dim (innermost first) the size, the stride in bytes (none for the first) and the box.
struct MapKey {
  const void* base = nullptr;
  int rank = 0;
  std::array<cuuint64_t, 4> dims{};
  std::array<cuuint64_t, 3> strides{};
  std::array<cuuint32_t, 4> box{};
  bool operator==(const MapKey&) const = default;
};

// The descriptors this thread encoded last. The driver's answer is a function of the key alone, so
// a hit is exact, also for a tensor made where a freed one was: at the same address, with the same
// sizes and strides, it is read through the same map, and with others it has another key. A repeated
// call then costs a scan of kCachedMaps keys instead of a driver call (a flash_v3 forward or a wgmma
// GEMM makes three or four maps); the oldest entry makes room for a new one.
constexpr size_t kCachedMaps = 16;
struct MapCache {
  std::array<MapKey, kCachedMaps> keys{};
  std::array<CUtensorMap, kCachedMaps> maps{};
  size_t used = 0, next = 0;  // entries filled; the one replaced next
  int64_t encodes = 0;        // the driver's encodes (the misses)
};
thread_local MapCache tl_maps;

// cuTensorMapEncodeTiled for a 16-bit tensor of `rank` dims (innermost first, unit stride
// implied for the first; strides in bytes), boxes of `box`, the 128-byte swizzle, through this
// thread's cache. UINT16: the engine moves bits, and bf16 and f16 share their size and the zero of
// the fill. `describe()` says what was asked for when the driver refuses it.
template <int kRank, typename Describe>
CUtensorMap encode_16bit(const void* base, const cuuint64_t (&dims)[kRank], const cuuint64_t (&strides)[kRank - 1],
                         const cuuint32_t (&box)[kRank], Describe&& describe) {
  static_assert(kRank >= 2 && kRank <= 4);
  MapKey key{.base = base, .rank = kRank};
  std::copy_n(dims, kRank, key.dims.begin());
  std::copy_n(strides, kRank - 1, key.strides.begin());
  std::copy_n(box, kRank, key.box.begin());
  MapCache& cache = tl_maps;
  for (size_t i = 0; i < cache.used; ++i)
    if (cache.keys[i] == key) return cache.maps[i];

  CUtensorMap map{};
  cuuint32_t element_strides[kRank];
  for (int i = 0; i < kRank; ++i) element_strides[i] = 1;
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, kRank, const_cast<void*>(base), dims,
                                    strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TS_CHECK(r == CUDA_SUCCESS, "{}: CUresult {}", describe(), static_cast<int>(r));
  ++cache.encodes;
  cache.keys[cache.next] = key;
  cache.maps[cache.next] = map;
  cache.used = std::max(cache.used, cache.next + 1);
  cache.next = (cache.next + 1) % kCachedMaps;
  return map;
}

}  // namespace

const cuda::DeviceProperties& properties(int index) {
  static std::mutex mutex;
  static std::map<int, cuda::DeviceProperties> known;
  const std::lock_guard lock(mutex);
  auto it = known.find(index);
  if (it == known.end()) it = known.emplace(index, cuda::device_properties(index)).first;
  return it->second;
}

CUtensorMap make_tensor_map_16bit(const void* base, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                                  int64_t batch_stride, int box_rows, int box_cols, const char* what) {
  // Dims and strides run from the innermost: (cols, rows, batch). A single batch gets any legal
  // stride: it is never stepped.
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batch)};
  const int64_t batch_bytes = batch > 1 ? batch_stride * 2 : row_stride * 2 * rows;
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_stride * 2), static_cast<cuuint64_t>(batch_bytes)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1};
  return encode_16bit<3>(base, dims, strides, box, [&] {
    return fmt::format("{}: cuTensorMapEncodeTiled refused a [{}, {}, {}] matrix (row stride {}, batch stride {} "
                       "elements, box {} x {})",
                       what, batch, rows, cols, row_stride, batch_stride, box_rows, box_cols);
  });
}

CUtensorMap make_tensor_map_16bit_4d(const void* base, int64_t batch, int64_t heads, int64_t rows, int64_t cols,
                                     int64_t batch_stride, int64_t head_stride, int64_t row_stride, int box_rows,
                                     int box_cols, const char* what) {
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  const int64_t head_bytes = heads > 1 ? head_stride * 2 : row_stride * 2 * rows;
  const int64_t batch_bytes = batch > 1 ? batch_stride * 2 : head_bytes * heads;
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(row_stride * 2), static_cast<cuuint64_t>(head_bytes),
                                 static_cast<cuuint64_t>(batch_bytes)};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1, 1};
  return encode_16bit<4>(base, dims, strides, box, [&] {
    return fmt::format("{}: cuTensorMapEncodeTiled refused a [{}, {}, {}, {}] tensor (strides {}, {}, {} elements, "
                       "box {} x {})",
                       what, batch, heads, rows, cols, batch_stride, head_stride, row_stride, box_rows, box_cols);
  });
}

int64_t tensor_map_encodes() { return tl_maps.encodes; }

}  // namespace ts::hopper
