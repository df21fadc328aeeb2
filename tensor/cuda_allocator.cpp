// tensor/cuda_allocator.cpp: the caching allocator (see cuda_allocator.h for the rules).
//
// Free blocks sit in two ordered sets (small and large pool) keyed by
// (stream, size, address): the first block at or after (stream, size) is the
// best fit. Blocks cut from one cudaMalloc segment are chained prev/next in
// address order, which is all merging needs. One mutex guards everything.
#include "tensor/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "tensor/cuda_check.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"

namespace ts::cuda {

namespace {

constexpr size_t kMinBlockSize = 512;        // every size rounds up to this
constexpr size_t kSmallSize = 1 << 20;       // requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2 << 20;     // small-pool segment size
constexpr size_t kLargeBuffer = 20 << 20;    // segment size for requests of 1 to 10 MiB
constexpr size_t kMinLargeAlloc = 10 << 20;  // from here a request gets a segment of its own...
constexpr size_t kRoundLarge = 2 << 20;      // ...rounded up to 2 MiB

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024 * 1024) return fmt::format("{:.2f} TiB", b / (1024.0 * 1024 * 1024 * 1024));
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.2f} KiB", b / 1024.0);
  return fmt::format("{} bytes", bytes);
}

struct Block {
  cudaStream_t stream = nullptr;
  size_t size = 0;
  char* ptr = nullptr;
  bool allocated = false;
  bool small = false;
  Block* prev = nullptr;  // neighbours in the same segment, in address order
  Block* next = nullptr;
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    const auto sa = reinterpret_cast<uintptr_t>(a->stream), sb = reinterpret_cast<uintptr_t>(b->stream);
    if (sa != sb) return sa < sb;
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};
using FreeSet = std::set<Block*, BlockOrder>;

// A CUDA graph's pool: its blocks are those of its capture stream; `held` are blocks freed while it
// captured that may not be handed out again before it is gone (other streams' blocks, which the
// graph may read, and, without caching, the graph's own, which its replays use).
struct GraphPool {
  std::vector<Block*> held;
};

struct DeviceState {
  FreeSet small_free, large_free;
  std::unordered_map<const void*, Block*> live;  // handed-out blocks by address
  std::unordered_map<cudaStream_t, GraphPool> graphs;  // the pools of the graphs that live
  int64_t allocated = 0, reserved = 0, peak = 0, num_allocs = 0;
};

bool caching_disabled() {
  // TS_CUDA_NO_CACHING=1: every tensor gets its own cudaMalloc, freed at once. Slow; it lets
  // compute-sanitizer see an access past a tensor's end (inside a cached segment it cannot).
  static const bool disabled = [] {
    const char* env = std::getenv("TS_CUDA_NO_CACHING");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return disabled;
}

class CachingAllocator final : public Allocator {
 public:
  CachingAllocator() {
    devices_.resize(static_cast<size_t>(std::max(device_count(), 1)));
    for (auto& d : devices_) d = std::make_unique<DeviceState>();
  }

  void* allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return nullptr;
    const size_t size = round_up(nbytes, kMinBlockSize);
    const bool small = size <= kSmallSize;
    const cudaStream_t stream = current_stream();
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceState& s = state(device);
    FreeSet& pool = small ? s.small_free : s.large_free;

    Block* block = nullptr;
    if (!caching_disabled()) {
      Block key;
      key.stream = stream;
      key.size = size;
      const auto it = pool.lower_bound(&key);  // best fit: the smallest free block >= size on this stream
      if (it != pool.end() && (*it)->stream == stream) {
        block = *it;
        pool.erase(it);
      }
    }
    if (block == nullptr) block = new_segment(s, device, stream, small, size);  // throws when out of memory
    if (!caching_disabled()) split(block, size, pool);

    block->allocated = true;
    s.live.emplace(block->ptr, block);
    s.allocated += static_cast<int64_t>(block->size);
    s.peak = std::max(s.peak, s.allocated);
    return block->ptr;
  }

  void deallocate(void* ptr, size_t, Device device) override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceState& s = state(device);
    const auto it = s.live.find(ptr);
    if (it == s.live.end()) {  // never ours: report, never throw from a destructor
      std::fprintf(stderr, "tensorscope: cuda allocator: free of unknown pointer %p on %s\n", ptr,
                   device.str().c_str());
      return;
    }
    Block* block = it->second;
    s.live.erase(it);
    s.allocated -= static_cast<int64_t>(block->size);
    if (capturing() && (block->stream != current_stream() || caching_disabled())) {
      if (const auto graph = s.graphs.find(current_stream()); graph != s.graphs.end()) {
        graph->second.held.push_back(block);  // the graph may use it: still `allocated`, so never merged
        return;
      }
    }
    release_block(s, block);
  }

  // A block no tensor and no graph uses: to its pool, or (without caching) to the system.
  void release_block(DeviceState& s, Block* block) {
    block->allocated = false;
    if (caching_disabled()) {
      (void)cudaFree(block->ptr);  // errors here would only repeat an earlier, reported one
      s.reserved -= static_cast<int64_t>(block->size);
      delete block;
      return;
    }
    FreeSet& pool = block->small ? s.small_free : s.large_free;
    merge(block, block->prev, pool);
    merge(block, block->next, pool);
    pool.insert(block);
  }

  AllocatorStats stats(Device device) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    const DeviceState& s = *devices_[static_cast<size_t>(device.index)];
    return {s.allocated, s.reserved, s.peak, s.num_allocs};
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t d = 0; d < devices_.size(); ++d) release_cached(*devices_[d], static_cast<int>(d));
  }

  void begin_graph(int device, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    state(Device{DeviceType::cuda, device}).graphs.emplace(stream, GraphPool{});
  }

  void end_graph(int device, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceState& s = state(Device{DeviceType::cuda, device});
    const auto graph = s.graphs.find(stream);
    if (graph == s.graphs.end()) return;
    const std::vector<Block*> held = std::move(graph->second.held);
    s.graphs.erase(graph);
    for (Block* block : held) release_block(s, block);
    release_cached(s, device, stream);
  }

  void reset_peak(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceState& s = state(Device{DeviceType::cuda, device});
    s.peak = s.allocated;
  }

 private:
  DeviceState& state(Device device) {
    TS_CHECK(device.index >= 0 && static_cast<size_t>(device.index) < devices_.size(),
             "cuda allocator: no such device {}", device.str());
    return *devices_[static_cast<size_t>(device.index)];
  }

  // A fresh cudaMalloc segment holding one free block of the whole segment.
  Block* new_segment(DeviceState& s, Device device, cudaStream_t stream, bool small, size_t size) {
    size_t segment = size;
    if (!caching_disabled()) segment = small ? kSmallBuffer : size < kMinLargeAlloc ? kLargeBuffer : round_up(size, kRoundLarge);
    set_device(device.index);
    void* ptr = nullptr;
    // While a graph captures, its segments are made with the capture's checks relaxed: cudaMalloc is
    // not a stream operation, and the segment lives as long as the graph. Nothing is released then
    // (cudaFree would wait for the device, which a capture forbids).
    const RelaxedCapture relaxed;
    cudaError_t err = cudaMalloc(&ptr, segment);
    if (err == cudaErrorMemoryAllocation && !capturing()) {
      (void)cudaGetLastError();
      release_cached(s, device.index);  // give back what the cache holds, then try once more
      err = cudaMalloc(&ptr, segment);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      if (err != cudaErrorMemoryAllocation) detail::cuda_fail(err, "cudaMalloc(&ptr, segment)", __FILE__, __LINE__);
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
      fail("CUDA out of memory: tried to allocate {} ({} bytes) on {}; {} is allocated to tensors and {} reserved by "
           "the caching allocator; the GPU has {} free of {}. Hint: free tensors you no longer need (they are freed "
           "when the last view goes), call ts::cuda::empty_cache(), or use smaller sizes.",
           format_bytes(static_cast<int64_t>(size)), size, device.str(), format_bytes(s.allocated),
           format_bytes(s.reserved), format_bytes(static_cast<int64_t>(free_bytes)),
           format_bytes(static_cast<int64_t>(total_bytes)));
    }
    s.reserved += static_cast<int64_t>(segment);
    s.num_allocs += 1;
    Block* block = new Block;
    block->stream = stream;
    block->size = segment;
    block->ptr = static_cast<char*>(ptr);
    block->small = small;
    return block;
  }

  // Cuts `block` down to `size` when the rest is worth keeping, returning the rest to the pool.
  static void split(Block* block, size_t size, FreeSet& pool) {
    const size_t rest = block->size - size;
    const bool worth_it = block->small ? rest >= kMinBlockSize : rest > kSmallSize;
    if (!worth_it) return;
    Block* remainder = new Block;
    remainder->stream = block->stream;
    remainder->size = rest;
    remainder->ptr = block->ptr + size;
    remainder->small = block->small;
    remainder->prev = block;
    remainder->next = block->next;
    if (block->next) block->next->prev = remainder;
    block->next = remainder;
    block->size = size;
    pool.insert(remainder);
  }

  // Absorbs a free neighbour into `block` (which is not in the pool yet).
  static void merge(Block* block, Block* neighbour, FreeSet& pool) {
    if (neighbour == nullptr || neighbour->allocated) return;
    pool.erase(neighbour);  // before anything changes its key
    if (neighbour == block->prev) {
      block->ptr = neighbour->ptr;
      block->prev = neighbour->prev;
      if (block->prev) block->prev->next = block;
    } else {
      block->next = neighbour->next;
      if (block->next) block->next->prev = block;
    }
    block->size += neighbour->size;
    delete neighbour;
  }

  // cudaFree every free block that is a whole segment (no neighbours), except those of the graphs
  // that live; with `only`, the segments of that stream alone.
  void release_cached(DeviceState& s, int device, cudaStream_t only = kAnyStream) {
    for (FreeSet* pool : {&s.small_free, &s.large_free}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        if (b->prev != nullptr || b->next != nullptr || s.graphs.contains(b->stream) ||
            (only != kAnyStream && b->stream != only)) {
          ++it;
          continue;
        }
        set_device(device);
        TS_CUDA_CHECK(cudaFree(b->ptr));  // waits for the device: the block's last user is done
        s.reserved -= static_cast<int64_t>(b->size);
        it = pool->erase(it);
        delete b;
      }
    }
  }

  static inline const cudaStream_t kAnyStream = reinterpret_cast<cudaStream_t>(~uintptr_t{0});
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

CachingAllocator& instance() {
  // Never destroyed: tensors freed during static destruction still find it, and
  // no cudaFree runs after the CUDA runtime has shut down.
  static CachingAllocator* allocator = new CachingAllocator();
  return *allocator;
}

}  // namespace

Allocator& caching_allocator() { return instance(); }

AllocatorStats memory_stats(int device) {
  if (!is_available()) return {};
  return instance().stats(Device{DeviceType::cuda, device});
}

void empty_cache() {
  if (is_available()) instance().empty_cache();
}

bool caching_enabled() { return !caching_disabled(); }

void reset_peak_memory_stats(int device) {
  if (is_available()) instance().reset_peak(device);
}

void begin_graph_pool(int device, void* stream) { instance().begin_graph(device, static_cast<cudaStream_t>(stream)); }
void end_graph_pool(int device, void* stream) { instance().end_graph(device, static_cast<cudaStream_t>(stream)); }

}  // namespace ts::cuda
