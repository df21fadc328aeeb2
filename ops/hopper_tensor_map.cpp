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
#include <vector>

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
                     "(innermost dim first; at {})",
                     s.what, fmt::join(dims, ", "), fmt::join(strides, ", "), fmt::join(box, ", "), s.base);
}

// ---- device_tensor_maps ----------------------------------------------------------------------------

constexpr size_t kMaxSetMaps = 4;  // maps in one set: a slot's room
constexpr size_t kDeviceSets = 16;  // slots per thread and device
constexpr size_t kRingBytes = kDeviceSets * kMaxSetMaps * sizeof(CUtensorMap);  // 8 KiB

struct MapSet {
  std::array<TensorMapSpec, kMaxSetMaps> specs{};
  size_t n = 0;
  std::array<CUtensorMap, kMaxSetMaps> maps{};  // what the slot holds on the device
  bool is(std::span<const TensorMapSpec> asked) const {
    return n == asked.size() && std::equal(asked.begin(), asked.end(), specs.begin());
  }
};

// The device memory of the rings. A ring outlives its thread: the thread leaves it here, and the
// next thread that needs one on that device takes it. Nothing is freed: cudaFree waits for the
// device, which another thread's capture forbids. A ring's new owner overwrites its slots by copies
// on the same stream the old owner's kernels were launched on, so behind them.
struct RingPool {
  std::mutex mutex;
  std::vector<std::pair<int, CUtensorMap*>> free;  // (device, memory)
};
RingPool& ring_pool() {
  static auto* pool = new RingPool;  // never destroyed: threads may exit after static destruction
  return *pool;
}

// One thread's slots on one device.
struct DeviceRing {
  int device = -1;
  CUtensorMap* memory = nullptr;  // kDeviceSets slots of kMaxSetMaps maps
  std::array<MapSet, kDeviceSets> sets{};
  size_t used = 0, next = 0, last = 0;  // slots filled; the one replaced next; the last one handed out
};

struct ThreadRings {
  std::vector<DeviceRing> rings;
  int64_t copies = 0;
  ~ThreadRings() {
    RingPool& pool = ring_pool();
    const std::lock_guard lock(pool.mutex);
    for (const DeviceRing& r : rings) pool.free.emplace_back(r.device, r.memory);
  }
};
thread_local ThreadRings tl_rings;

DeviceRing& ring_of(int device) {
  for (DeviceRing& r : tl_rings.rings)
    if (r.device == device) return r;
  DeviceRing ring;
  ring.device = device;
  {
    RingPool& pool = ring_pool();
    const std::lock_guard lock(pool.mutex);
    const auto it = std::find_if(pool.free.begin(), pool.free.end(), [&](const auto& f) { return f.first == device; });
    if (it != pool.free.end()) {
      ring.memory = it->second;
      pool.free.erase(it);
    }
  }
  if (ring.memory == nullptr) {
    cuda::set_device(device);
    void* memory = nullptr;
    TS_CUDA_CHECK(cudaMalloc(&memory, kRingBytes));
    ring.memory = static_cast<CUtensorMap*>(memory);
  }
  return tl_rings.rings.emplace_back(std::move(ring));
}

// The sets placed while a graph was being captured: never overwritten, never freed.
struct KeptSet {
  int device;
  MapSet set;
  CUtensorMap* memory;
};
const CUtensorMap* kept_tensor_maps(int device, std::span<const TensorMapSpec> specs) {
  static std::mutex mutex;
  static auto* kept = new std::vector<KeptSet>;  // never destroyed, as the memory it names
  const std::lock_guard lock(mutex);
  for (const KeptSet& k : *kept)
    if (k.device == device && k.set.is(specs)) return k.memory;
  KeptSet k{device, {}, nullptr};
  k.set.n = specs.size();
  for (size_t i = 0; i < specs.size(); ++i) {
    k.set.specs[i] = specs[i];
    k.set.maps[i] = make_tensor_map(specs[i]);
  }
  // A capture forbids cudaMalloc and synchronous copies unless relaxed; neither is recorded in the
  // graph: the copy runs now, on the legacy stream, which the capture's own stream does not wait on.
  const cuda::RelaxedCapture relaxed;
  cuda::set_device(device);
  void* memory = nullptr;
  TS_CUDA_CHECK(cudaMalloc(&memory, specs.size() * sizeof(CUtensorMap)));
  TS_CUDA_CHECK(cudaMemcpy(memory, k.set.maps.data(), specs.size() * sizeof(CUtensorMap), cudaMemcpyHostToDevice));
  k.memory = static_cast<CUtensorMap*>(memory);
  kept->push_back(k);
  return k.memory;
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
  MapCache& cache = tl_maps;
  for (size_t i = 0; i < cache.used; ++i)
    if (cache.specs[i] == spec) return cache.maps[i];

  CUtensorMap map{};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, static_cast<cuuint32_t>(spec.rank),
                                    const_cast<void*>(spec.base), spec.dims.data(), spec.strides.data(),
                                    spec.box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TS_CHECK(r == CUDA_SUCCESS, "{}: CUresult {}", describe(spec), static_cast<int>(r));
  ++cache.encodes;
  cache.specs[cache.next] = spec;
  cache.maps[cache.next] = map;
  cache.used = std::max(cache.used, cache.next + 1);
  cache.next = (cache.next + 1) % kCachedMaps;
  return map;
}

const CUtensorMap* device_tensor_maps(int device, std::span<const TensorMapSpec> specs) {
  TS_CHECK(!specs.empty() && specs.size() <= kMaxSetMaps, "device_tensor_maps: {} maps in a set (1 to {})",
           specs.size(), kMaxSetMaps);
  if (cuda::capturing()) return kept_tensor_maps(device, specs);
  DeviceRing& ring = ring_of(device);
  const auto slot_memory = [&](size_t slot) { return ring.memory + slot * kMaxSetMaps; };
  if (ring.sets[ring.last].is(specs)) return slot_memory(ring.last);  // a layer called again
  for (size_t i = 0; i < ring.used; ++i)
    if (ring.sets[i].is(specs)) return slot_memory(ring.last = i);

  MapSet set;
  set.n = specs.size();
  for (size_t i = 0; i < specs.size(); ++i) {
    set.specs[i] = specs[i];
    set.maps[i] = make_tensor_map(specs[i]);
  }
  const size_t slot = ring.next;
  MapSet& held = ring.sets[slot] = set;
  // From the slot's host copy, which lives until the slot's next overwrite. A slot whose copy was
  // refused holds nothing.
  const cudaError_t err = cudaMemcpyAsync(slot_memory(slot), held.maps.data(), set.n * sizeof(CUtensorMap),
                                          cudaMemcpyHostToDevice, cuda::current_stream());
  if (err != cudaSuccess) held = MapSet{};
  TS_CUDA_CHECK(err);
  ++tl_rings.copies;
  ring.used = std::max(ring.used, slot + 1);
  ring.next = (slot + 1) % kDeviceSets;
  ring.last = slot;
  return slot_memory(slot);
}

int64_t tensor_map_encodes() { return tl_maps.encodes; }
int64_t device_map_copies() { return tl_rings.copies; }

}  // namespace ts::hopper
