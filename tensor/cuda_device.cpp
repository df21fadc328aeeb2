// tensor/cuda_device.cpp: CUDA device discovery through the runtime API.
//
// cudart is linked everywhere; on a machine with no driver its calls return
// an error instead of crashing, and we turn that into a clear ts::Error the
// moment someone asks for a cuda tensor. CPU work never touches this file.
//
// Each device is looked at once, on its first use: its compute capability, the
// capability TS_DEVICE_CAPABILITY asks rungs to be chosen for, and which of this
// build's code it runs (the tiny kernel of tensor/cuda_device_code.cu, asked
// through cudaFuncGetAttributes: the driver picks for it the image it picks for
// every other kernel of the library, or none).
#include "tensor/cuda_device.h"

#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "tensor/cuda_allocator.h"
#include "tensor/cuda_check.h"
#include "tensor/error.h"
#include "tensor/storage.h"

// Set by CMakeLists.txt on this file: what the build carries (TS_CUDA_ARCHITECTURES, TS_CUDA_SM90A)
// and where it was configured (TS_CONFIGURED_SOURCE_DIR, TS_CONFIGURED_BINARY_DIR).
#if !defined(TS_CUDA_ARCHITECTURES) || !defined(TS_CUDA_SM90A) || !defined(TS_CONFIGURED_BINARY_DIR)
#error "CMakeLists.txt defines TS_CUDA_ARCHITECTURES, TS_CUDA_SM90A and TS_CONFIGURED_*_DIR for this file"
#endif

namespace ts {

namespace cuda::detail {
cudaError_t device_code_attributes(cudaFuncAttributes* attributes);  // tensor/cuda_device_code.cu
}

namespace {

constexpr cuda::ComputeCapability kOldest{7, 5};  // the oldest GPU the rungs are written for
constexpr int kMaxDevices = 64;

// "8.0" -> {8, 0}; nothing else parses (not "8", not "80", not "8.0.1").
bool parse_capability(std::string_view text, cuda::ComputeCapability& out) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 2 != text.size()) return false;
  const char* end = text.data() + dot;
  const auto [p, ec] = std::from_chars(text.data(), end, out.major);
  if (ec != std::errc{} || p != end) return false;
  const char m = text[dot + 1];
  if (m < '0' || m > '9') return false;
  out.minor = m - '0';
  return true;
}

struct Probe {
  int count = 0;
  std::string reason;
  bool emulate = false;                   // TS_DEVICE_CAPABILITY is set (and parsed)
  cuda::ComputeCapability emulated;       // its value
  std::string environment_error;          // TS_DEVICE_CAPABILITY could not be parsed
  Probe() {
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = fmt::format("{} ({}). Hint: this machine has no usable NVIDIA GPU or driver; run on the CPU "
                           "(--device cpu) or on a machine with a GPU",
                           cudaGetErrorString(err), cudaGetErrorName(err));
      (void)cudaGetLastError();  // clear the sticky-free error so later queries start clean
    } else if (count == 0) {
      reason = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
    }
    if (const char* env = std::getenv("TS_DEVICE_CAPABILITY"); env != nullptr && *env != '\0') {
      if (!parse_capability(env, emulated))
        environment_error = fmt::format("TS_DEVICE_CAPABILITY='{}' is not a compute capability: write it as major.minor, "
                                        "e.g. 7.5 (a T4), 8.0 (an A100), 8.6, 8.9",
                                        env);
      else if (emulated < kOldest)
        environment_error = fmt::format("TS_DEVICE_CAPABILITY={}: tensorscope's oldest GPU is compute capability {}",
                                        env, cuda::to_string(kOldest));
      else
        emulate = true;
    }
  }
};

const Probe& probe() {
  static const Probe instance;
  return instance;
}

// CMakeLists.txt hands the architectures over with commas ("75-real,80-real,90"): as CMake writes
// them, with semicolons.
std::string cmake_list(std::string_view commas) {
  std::string out(commas);
  for (char& c : out)
    if (c == ',') c = ';';
  return out;
}

// "75-real,80,90-virtual" in words: what a driver can load from such a build.
std::string describe_architectures(std::string_view list) {
  std::string sass, ptx;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    std::string_view number = entry.substr(0, entry.find('-'));
    const bool real = !entry.ends_with("-virtual"), virt = !entry.ends_with("-real");
    if (real) sass += fmt::format("{}sm_{}", sass.empty() ? "" : ", ", number);
    if (virt) ptx += fmt::format("{}compute_{}", ptx.empty() ? "" : ", ", number);
  }
  return fmt::format("machine code for {}; PTX for {}", sass.empty() ? "no GPU" : sass,
                     ptx.empty() ? "none (nothing the driver could compile for a newer GPU)" : ptx);
}

// The command that rebuilds this checkout for a GPU of capability c.
std::string rebuild_command(cuda::ComputeCapability c) {
  return fmt::format("cmake -S {} -B {} -DCMAKE_CUDA_ARCHITECTURES={}{} && cmake --build {}", TS_CONFIGURED_SOURCE_DIR,
                     TS_CONFIGURED_BINARY_DIR, c.major, c.minor, TS_CONFIGURED_BINARY_DIR);
}

// One device's entry, filled on its first use (under the mutex; `ready` then publishes it, so that
// check_device_available, which every op on a cuda tensor calls, pays one load after that).
struct DeviceEntry {
  std::atomic<bool> ready{false};
  cuda::DeviceTarget target;
  std::string gpu;    // "NVIDIA H200, compute capability 9.0", once read
  std::string error;  // non-empty: the device cannot be used, and why
};
std::array<DeviceEntry, kMaxDevices> devices;
std::mutex devices_mutex;

void look_at(int index, DeviceEntry& d) {
  const Probe& p = probe();
  cudaDeviceProp props{};
  if (const cudaError_t err = cudaGetDeviceProperties(&props, index); err != cudaSuccess) {
    (void)cudaGetLastError();
    d.error = fmt::format("cudaGetDeviceProperties failed: {} ({})", cudaGetErrorString(err), cudaGetErrorName(err));
    return;
  }
  cuda::DeviceTarget& t = d.target;
  t.name = props.name;
  t.gpu = {props.major, props.minor};
  d.gpu = fmt::format("{}, compute capability {}", t.name, cuda::to_string(t.gpu));
  if (t.gpu < kOldest) {
    d.error = fmt::format("tensorscope's kernels are written for compute capability {} and newer",
                          cuda::to_string(kOldest));
    return;
  }
  if (!p.environment_error.empty()) {
    d.error = p.environment_error;
    return;
  }
  t.chosen_as = t.gpu;
  if (p.emulate) {
    if (t.gpu < p.emulated) {
      d.error = fmt::format("TS_DEVICE_CAPABILITY={} is newer than this GPU: a GPU can be made to choose rungs as an "
                            "older one would, never as a newer one",
                            cuda::to_string(p.emulated));
      return;
    }
    t.chosen_as = p.emulated;
  }
  // Which image of this build the driver runs here. cudaFuncGetAttributes works on the current
  // device; the caller's current device is put back afterwards.
  int previous = 0;
  (void)cudaGetDevice(&previous);
  cudaFuncAttributes attributes{};
  cudaError_t err = cudaSetDevice(index);
  if (err == cudaSuccess) err = cuda::detail::device_code_attributes(&attributes);
  (void)cudaSetDevice(previous);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    const std::string carries = describe_architectures(TS_CUDA_ARCHITECTURES);
    if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidKernelImage ||
        err == cudaErrorInvalidDeviceFunction)
      d.error = fmt::format("this build carries no code this GPU can run: it was built for "
                            "CMAKE_CUDA_ARCHITECTURES=\"{}\" ({}). Rebuild it for this GPU:\n  {}",
                            cmake_list(TS_CUDA_ARCHITECTURES), carries, rebuild_command(t.gpu));
    else if (err == cudaErrorUnsupportedPtxVersion)
      d.error = fmt::format("the driver cannot compile this build's PTX ({}): the toolkit that built it is newer than "
                            "the driver. Update the driver, or build machine code for this GPU:\n  {}",
                            carries, rebuild_command(t.gpu));
    else
      d.error = fmt::format("cannot load this build's kernels: {} ({})", cudaGetErrorString(err),
                            cudaGetErrorName(err));
    return;
  }
  const int version = attributes.ptxVersion != 0 ? attributes.ptxVersion : attributes.binaryVersion;
  t.code = {version / 10, version % 10};
}

// The entry of a device that exists; throws with the reason it cannot be used.
const DeviceEntry& entry(int index, const char* op) {
  DeviceEntry& d = devices[static_cast<size_t>(index)];
  if (!d.ready.load(std::memory_order_acquire)) [[unlikely]] {
    const std::lock_guard lock(devices_mutex);
    if (!d.ready.load(std::memory_order_relaxed)) {
      look_at(index, d);
      d.ready.store(true, std::memory_order_release);
    }
  }
  if (!d.error.empty()) [[unlikely]] {
    if (d.gpu.empty()) fail("{}: cannot use cuda:{}: {}", op, index, d.error);
    fail("{}: cannot use cuda:{} ({}): {}", op, index, d.gpu, d.error);
  }
  return d;
}

thread_local int current_device = -1;  // what this thread last made current (-1: unknown)

}  // namespace

int cuda::device_count() { return probe().count; }
bool cuda::is_available() { return probe().count > 0; }
const std::string& cuda::unavailable_reason() { return probe().reason; }
bool cuda::built_with_cuda() { return true; }

std::string cuda::to_string(ComputeCapability c) { return fmt::format("{}.{}", c.major, c.minor); }

const char* cuda::built_architectures() {
  static const std::string list = cmake_list(TS_CUDA_ARCHITECTURES);
  return list.c_str();
}
bool cuda::built_sm90a() { return TS_CUDA_SM90A != 0; }

const cuda::DeviceTarget& cuda::target(int index) {
  check_device_available(Device{DeviceType::cuda, index}, "cuda::target");
  return devices[static_cast<size_t>(index)].target;
}

void cuda::init() {
  static const bool installed = [] {
    set_allocator(DeviceType::cuda, &cuda::caching_allocator());
    return true;
  }();
  (void)installed;
}

cuda::DeviceProperties cuda::device_properties(int device) {
  TS_CHECK(device >= 0 && device < device_count(), "device_properties: no CUDA device {} ({} visible){}", device,
           device_count(), is_available() ? "" : ": " + unavailable_reason());
  cudaDeviceProp p{};
  TS_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.multiprocessors = p.multiProcessorCount;
  out.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  out.l2_cache_bytes = p.l2CacheSize;
  out.shared_memory_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  out.max_threads_per_block = p.maxThreadsPerBlock;
  return out;
}

void cuda::set_device(int device) {
  if (device == current_device) return;
  TS_CUDA_CHECK(cudaSetDevice(device));
  current_device = device;
}

void cuda::synchronize() {
  check_not_capturing("synchronize", "a capture records GPU work without running it, so there is nothing to wait for");
  TS_CUDA_CHECK(cudaDeviceSynchronize());
}
void cuda::synchronize_stream() {
  check_not_capturing("synchronize_stream",
                      "a capture records GPU work without running it, so there is nothing to wait for");
  TS_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
}

void cuda::copy_to_host(void* dst, const void* src, size_t bytes, int device) {
  check_not_capturing("reading a cuda tensor on the host (item(), to_vector(), printing, to(cpu))",
                      "the values do not exist until the graph is replayed");
  set_device(device);
  TS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void check_device_available(Device device, const char* op) {
  if (device.is_cpu()) return;
  TS_CHECK(cuda::is_available(), "{}: cannot use {}: {}", op, device.str(), cuda::unavailable_reason());
  TS_CHECK(device.index < cuda::device_count(), "{}: cannot use {}: only {} CUDA device(s) visible", op, device.str(),
           cuda::device_count());
  TS_CHECK(device.index < kMaxDevices, "{}: cannot use {}: tensorscope handles at most {} devices", op, device.str(),
           kMaxDevices);
  (void)entry(device.index, op);
  cuda::init();
}

}  // namespace ts
