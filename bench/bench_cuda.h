// bench/bench_cuda.h: the empty kernels of bench_cuda.cu, launched by ts_bench's cuda/raw_launch
// and cuda/launch_like_flash_v3 entries.
#pragma once

#include <cstddef>

namespace ts::bench {

// <<<1, 1>>> of a kernel that does nothing and takes nothing.
void launch_empty_kernel();

// What the empty kernel launched like flash_v3 takes: flash_v3's own arguments (its three tensor
// maps by value and the problem, 448 bytes, as one struct or as flash_v3 passes them, four
// parameters: the three maps and the problem), a pointer to the maps instead (72 bytes), or one int.
enum class LaunchArguments { like_flash_v3, four_parameters, maps_pointer, one_int };

// An empty kernel on `blocks` x `threads` with `smem_bytes` of dynamic shared memory, on device 0.
void launch_empty_like_flash_v3(int blocks, int threads, size_t smem_bytes, LaunchArguments arguments);

// The same with flash_v2's argument, its FlashProblem (kLikeFlashV2ArgBytes bytes; ts_bench checks
// the size).
inline constexpr size_t kLikeFlashV2ArgBytes = 176;
void launch_empty_like_flash_v2(int blocks, int threads, size_t smem_bytes);

}  // namespace ts::bench
