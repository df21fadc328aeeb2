// tests/support/launch_probe.cu: a kernel launched through ts::launch with a block size the
// test chooses, so that a launch can be made to fail (more than 1024 threads per block).
#include "ops/cuda_common.cuh"

namespace ts::testing {

namespace {
__global__ void write_index_kernel(int* out) { out[threadIdx.x] = static_cast<int>(threadIdx.x); }
}  // namespace

void launch_probe(int* out, int threads) { launch(write_index_kernel, 1, threads, out); }

}  // namespace ts::testing
