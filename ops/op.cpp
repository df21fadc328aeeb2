// ops/op.cpp: the parts of OpCall that are not inline.
#include "ops/op.h"

#include "tensor/cuda_device.h"

namespace ts {

bool gpu_meets(const GpuNeeds& needs, Device device, std::string* why) {
  if (!device.is_cuda() || !needs.above_oldest()) return true;
  const cuda::DeviceTarget& t = cuda::target(device.index);
  const cuda::ComputeCapability wanted{needs.major, needs.minor};
  // The capability rungs are chosen for, as a refusal names it (formatted only when one is asked for).
  const auto chosen_as = [&t] {
    return t.emulated() ? fmt::format("{} as TS_DEVICE_CAPABILITY chooses (the GPU itself is {})",
                                      cuda::to_string(t.chosen_as), cuda::to_string(t.gpu))
                        : cuda::to_string(t.chosen_as);
  };
  if (needs.exact) {
    if (!cuda::built_sm90a()) {
      if (why)
        *why = fmt::format("needs compute capability {} exactly ({}), and this build has no sm_90a code "
                           "(CMAKE_CUDA_ARCHITECTURES={}: 90 must be among them)",
                           cuda::to_string(wanted), needs.what, cuda::built_architectures());
      return false;
    }
    if (t.chosen_as != wanted) {
      if (why)
        *why = fmt::format("needs compute capability {} exactly ({}); {} is {}", cuda::to_string(wanted), needs.what,
                           device.str(), chosen_as());
      return false;
    }
    return true;
  }
  if (t.chosen_as < wanted) {
    if (why)
      *why = fmt::format("needs compute capability {} ({}); {} is {}", cuda::to_string(wanted), needs.what,
                         device.str(), chosen_as());
    return false;
  }
  if (t.code < wanted) {
    if (why)
      *why = fmt::format("needs compute capability {} ({}); this build runs compute_{}{} code on {} "
                         "(CMAKE_CUDA_ARCHITECTURES={}: add {}{} or newer)",
                         cuda::to_string(wanted), needs.what, t.code.major, t.code.minor, device.str(),
                         cuda::built_architectures(), wanted.major, wanted.minor);
    return false;
  }
  return true;
}

std::string gpu_needs_name(const GpuNeeds& needs) {
  if (needs.any_gpu()) return "-";
  return fmt::format("{}.{}{}", needs.major, needs.minor, needs.exact ? "a" : "");
}

void OpCall::scalar_args(std::vector<double>& out) const {
  if (op.scalar_args != nullptr) op.scalar_args(*this, out);
}

void OpCall::wrong_attrs() const {
  fail("{}: internal error: the call carries another op's attribute struct (a front end or kernel of {} reads "
       "attributes its OpDef does not name)",
       op.name, op.name);
}

}  // namespace ts
