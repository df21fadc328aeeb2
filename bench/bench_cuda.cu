// bench/bench_cuda.cu: the empty kernel behind ts_bench's cuda/raw_launch entry.
//
// Launching a kernel that does nothing measures the floor every op pays on the
// CPU side: the CUDA runtime and driver turning <<<...>>> into a queued launch.
// Our dispatch overhead is judged against it (dispatch/cuda/add_1elem).
#include <cuda_runtime.h>

namespace ts::bench {

__global__ void empty_kernel() {}

void launch_empty_kernel() { empty_kernel<<<1, 1>>>(); }

}  // namespace ts::bench
