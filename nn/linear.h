// nn/linear.h: y = x W^T + b, like torch.nn.Linear.
//
// Shapes: x [*, in] -> y [*, out]; weight [out, in]; bias [out] (optional).
// forward runs ts::linear, which dispatches ts::t (a view: W^T is read in
// place, zero device time) and ts::addmm (one GEMM, the bias in its epilogue).
// A named Linear opens a profiler scope of that name around its forward; an
// unnamed one (the default, as inside a larger module) adds no scope.
#pragma once

#include "nn/module.h"

namespace ts::nn {

class Linear : public Module {
 public:
  // Weight and bias drawn uniform in [-1/sqrt(in), 1/sqrt(in)) as in PyTorch, from ts::manual_seed's generator.
  Linear(int64_t in_features, int64_t out_features, bool bias, Options options = {}, std::string name = "");
  // Wraps existing tensors (weight [out, in], bias [out] or undefined).
  Linear(Tensor weight, Tensor bias, std::string name = "");

  Tensor forward(const Tensor& x) const;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_, bias_;
};

}  // namespace ts::nn
