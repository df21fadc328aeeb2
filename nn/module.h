// nn/module.h: the small base every layer shares: a name and named parameters.
//
// A module's name is the profiler scope of its forward ("linear_fwd",
// "mlp_fwd"), so a trace shows each layer as a user annotation around the ops
// it runs. nn/ composes ops; it never contains a kernel.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ts::nn {

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;

  const std::string& name() const { return name_; }
  // (name, tensor) pairs in registration order; a child's names carry its prefix ("gate.weight").
  const std::vector<std::pair<std::string, Tensor>>& parameters() const { return parameters_; }

 protected:
  const Tensor& register_parameter(std::string name, Tensor value) {
    parameters_.emplace_back(std::move(name), std::move(value));
    return parameters_.back().second;
  }
  void register_module(const std::string& prefix, const Module& child) {
    for (const auto& [name, value] : child.parameters()) parameters_.emplace_back(prefix + "." + name, value);
  }

 private:
  std::string name_;
  std::vector<std::pair<std::string, Tensor>> parameters_;
};

// Uniform in [-bound, bound) (PyTorch's default init for Linear with bound = 1/sqrt(in)),
// drawn on the host in f32 from ts::manual_seed's generator, then converted and moved.
Tensor uniform_parameter(const Dims& shape, double bound, Options options);

}  // namespace ts::nn
