// profiler/cupti_source_absent.cpp: the CUDA side of a profile in a build without the CUDA toolkit
// (CMakeLists.txt compiles it instead of the CUPTI files). A profile that asks for CUDA activity
// records the CPU side, as on a machine without a GPU: it says so once on stderr, and the
// recording's device_activity says why (the table and the trace then carry no CUDA rows).
#include <cstdio>
#include <string>

#include "profiler/cupti_source.h"
#include "tensor/cuda_device.h"

namespace ts::profiler {

namespace {

class AbsentSource final : public DeviceActivitySource {
 public:
  void prepare() override {
    if (warned_) return;
    warned_ = true;
    std::fprintf(stderr, "warning: profiler: CUDA activity was asked for, but %s; only CPU events are recorded\n",
                 reason().c_str());
  }
  void start() override {}
  void stop(Recording& recording) override { recording.device_activity.error = reason(); }

 private:
  static std::string reason() { return "no usable CUDA device: " + cuda::unavailable_reason(); }
  bool warned_ = false;
};

}  // namespace

DeviceActivitySource& cupti_activity_source() {
  static AbsentSource source;
  return source;
}

}  // namespace ts::profiler
