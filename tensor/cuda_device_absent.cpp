// tensor/cuda_device_absent.cpp: the CUDA device API of a build configured without the CUDA
// toolkit (CMakeLists.txt compiles this file instead of tensor/cuda_device.cpp, cuda_check.cpp,
// cuda_allocator.cpp, cuda_graph.cpp and cuda_device_code.cu). There is no device: device_count() is 0, every
// request for a cuda tensor throws a ts::Error saying why, and the CPU runs everything.
#include <atomic>
#include <memory>
#include <string>

#include "tensor/cuda_allocator.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"
#include "tensor/error.h"

namespace ts {

namespace {
const std::string kReason =
    "this build has no CUDA backend: CMake found no CUDA toolkit (nvcc) when it was configured. Hint: every "
    "tutorial runs on the CPU (--device cpu); to use a GPU, install the CUDA toolkit and configure again";
}  // namespace

int cuda::device_count() { return 0; }
bool cuda::is_available() { return false; }
const std::string& cuda::unavailable_reason() { return kReason; }
bool cuda::built_with_cuda() { return false; }

std::string cuda::to_string(ComputeCapability c) { return fmt::format("{}.{}", c.major, c.minor); }

const cuda::DeviceTarget& cuda::target(int index) { fail("cuda::target: cannot use cuda:{}: {}", index, kReason); }
const char* cuda::built_architectures() { return ""; }
bool cuda::built_sm90a() { return false; }

void cuda::init() {}
cuda::DeviceProperties cuda::device_properties(int device) {
  fail("device_properties: no CUDA device {}: {}", device, kReason);
}
void cuda::set_device(int device) { fail("set_device: cannot use cuda:{}: {}", device, kReason); }
void cuda::synchronize() { fail("synchronize: {}", kReason); }
void cuda::synchronize_stream() { fail("synchronize_stream: {}", kReason); }
void cuda::copy_to_host(void*, const void*, size_t, int device) {
  fail("copy to the host: cannot use cuda:{}: {}", device, kReason);
}
// The registry of a CPU-only build holds no CUDA variant, so nothing launches.
void cuda::check_launch(const char* variant_name) { fail("{}: {}", variant_name, kReason); }
void cuda::clear_launch_error() {}

void check_device_available(Device device, const char* op) {
  TS_CHECK(device.is_cpu(), "{}: cannot use {}: {}", op, device.str(), kReason);
}

// tensor/cuda_allocator.h: no device memory to count.
Allocator& cuda::caching_allocator() { fail("the CUDA caching allocator: {}", kReason); }
AllocatorStats cuda::memory_stats(int device) { fail("memory_stats: cannot use cuda:{}: {}", device, kReason); }
void cuda::empty_cache() {}  // nothing is cached
bool cuda::caching_enabled() { return false; }
void cuda::reset_peak_memory_stats(int device) {
  fail("reset_peak_memory_stats: cannot use cuda:{}: {}", device, kReason);
}

// A graph: every capture is refused with the reason; nothing else can happen to one.
struct cuda::Graph::State {};
namespace {
uint64_t next_graph_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}
}  // namespace
cuda::Graph::Graph() : state_(std::make_unique<State>()), id_(next_graph_id()) {}
cuda::Graph::~Graph() = default;
void cuda::Graph::capture_begin() { fail("Graph::capture_begin: {}", kReason); }
void cuda::Graph::capture_end() { fail("Graph::capture_end: this graph is not being captured: {}", kReason); }
void cuda::Graph::capture_abort() {}
void cuda::Graph::replay() { fail("Graph::replay: nothing captured: {}", kReason); }
bool cuda::Graph::captured() const { return false; }
bool cuda::is_capturing() { return false; }
int64_t cuda::Graph::node_count() const { return 0; }
void cuda::Graph::release() noexcept {}
cuda::GraphCapture::GraphCapture(Graph& graph) : graph_(graph), exceptions_(0) { graph.capture_begin(); }
cuda::GraphCapture::~GraphCapture() noexcept(false) {}
void cuda::detail::set_graph_observer(const GraphObserver*) {}  // no graph ever begins
int64_t cuda::detail::captured_node_count() { return -1; }

}  // namespace ts
