// tensor/cuda_allocator.h: the caching allocator for device memory, in the spirit of PyTorch's.
//
// cudaMalloc and cudaFree are slow (tens of microseconds, and cudaFree waits
// for the whole device), so freed blocks are kept and handed out again:
//   - sizes round up to 512 bytes;
//   - requests up to 1 MiB come from 2 MiB segments (the small pool), larger
//     ones from 20 MiB segments (up to 10 MiB) or a segment of their own
//     rounded to 2 MiB (the large pool);
//   - a cached block larger than the request is split, and a freed block is
//     merged with free neighbours of the same segment;
//   - blocks belong to the stream they were allocated on and are only reused
//     there (work on one stream runs in order, so reuse needs no event);
//   - when cudaMalloc fails, every unused cached segment is released and the
//     call retried once; if it still fails, ts::Error says how much was asked
//     for, allocated and reserved, and the allocator's state is unchanged;
//   - a CUDA graph's capture (tensor/cuda_graph.h) allocates on the graph's own
//     stream, hence from a pool of its own: its replays write into those blocks,
//     so none of them goes back to other work, nor to the system, while the graph
//     lives, and a block of other work freed during the capture (which the graph
//     may still read) waits until the graph is gone.
// Storage reports every allocation and free to the profiler's memory observer
// (tensor/allocator.h); stats() gives the totals it shows.
#pragma once

#include <cstdint>

#include "tensor/allocator.h"

namespace ts::cuda {

// The process-wide caching allocator (installed for DeviceType::cuda by cuda::init()).
Allocator& caching_allocator();

// allocated: bytes in blocks handed out (rounded sizes); reserved: bytes held
// from cudaMalloc; peak_allocated; num_allocs: cudaMalloc calls so far.
AllocatorStats memory_stats(int device = 0);

// Releases every cached segment that holds no live block (cudaFree), on every device.
void empty_cache();

// False under TS_CUDA_NO_CACHING=1: then every tensor has its own cudaMalloc, freed at
// once (slow, but compute-sanitizer then catches an access past a tensor's end).
bool caching_enabled();

// Starts the peak_allocated high-water mark again from the current allocated bytes.
void reset_peak_memory_stats(int device = 0);

// The memory of a CUDA graph whose capture runs on `stream` (a cudaStream_t) on `device`: from
// begin to end, the allocator keeps the graph's pool (see above); end releases the segments of the
// pool that hold no live tensor and hands back the blocks the capture held.
void begin_graph_pool(int device, void* stream);
void end_graph_pool(int device, void* stream);

}  // namespace ts::cuda
