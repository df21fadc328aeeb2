// nn/linear.cpp: torch.nn.Linear.
#include "nn/linear.h"

#include <cmath>

#include "ops/ops.h"
#include "profiler/profiler.h"

namespace ts::nn {

Tensor uniform_parameter(const Dims& shape, double bound, Options options) {
  const Tensor u = ts::rand(shape, {DType::f32, kCPU});
  return ts::sub(ts::mul(u, 2 * bound), bound).to(options.dtype).to(options.device);
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Options options, std::string name)
    : Module(std::move(name)) {
  TS_CHECK(in_features > 0 && out_features > 0, "nn.Linear: in_features ({}) and out_features ({}) must be positive",
           in_features, out_features);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight_ = register_parameter("weight", uniform_parameter({out_features, in_features}, bound, options));
  if (bias) bias_ = register_parameter("bias", uniform_parameter({out_features}, bound, options));
}

Linear::Linear(Tensor weight, Tensor bias, std::string name) : Module(std::move(name)) {
  TS_CHECK(weight.dim() == 2, "nn.Linear: weight must be [out, in], got shape {}", weight.shape());
  weight_ = register_parameter("weight", std::move(weight));
  if (bias.defined()) bias_ = register_parameter("bias", std::move(bias));
}

Tensor Linear::forward(const Tensor& x) const {
  if (name().empty()) return ts::linear(x, weight_, bias_);
  profiler::RecordFunction scope(name());
  return ts::linear(x, weight_, bias_);
}

}  // namespace ts::nn
