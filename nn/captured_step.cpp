// nn/captured_step.cpp: see the header.
#include "nn/captured_step.h"

#include <fmt/format.h>

#include <utility>

#include "ops/ops.h"
#include "tensor/error.h"

namespace ts::nn {

namespace {

std::string describe(const Tensor& x) {
  return fmt::format("{} {} on {}", x.shape(), dtype_short_name(x.dtype()), x.device().str());
}

}  // namespace

CapturedStep::CapturedStep(Step step, const std::vector<Tensor>& example_inputs)
    : graph_(std::make_unique<cuda::Graph>()) {
  TS_CHECK(step != nullptr, "CapturedStep: no step given");
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const Tensor& x = example_inputs[i];
    TS_CHECK(x.defined() && x.device().is_cuda(), "CapturedStep: input {} is {}, expected a cuda tensor (a graph "
             "replays GPU work only)", i, x.defined() ? describe(x) : "undefined");
  }
  (void)step(example_inputs);  // the warm-up
  inputs_.reserve(example_inputs.size());
  for (const Tensor& x : example_inputs) inputs_.push_back(clone(x));
  {
    cuda::GraphCapture capture(*graph_);
    outputs_ = step(inputs_);
  }
}

const std::vector<Tensor>& CapturedStep::operator()(const std::vector<Tensor>& inputs) {
  TS_CHECK(inputs.size() == inputs_.size(), "CapturedStep: given {} inputs, the step was captured with {}",
           inputs.size(), inputs_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &x = inputs[i], &captured = inputs_[i];
    TS_CHECK(x.defined() && x.shape() == captured.shape() && x.dtype() == captured.dtype() &&
                 x.device() == captured.device(),
             "CapturedStep: input {} is {}, but the step was captured for {}: a graph replays fixed shapes and "
             "addresses; capture another step for this one",
             i, x.defined() ? describe(x) : "undefined", describe(captured));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].data_ptr() != inputs_[i].data_ptr()) copy_(inputs_[i], inputs[i]);
  return replay();
}

const std::vector<Tensor>& CapturedStep::replay() {
  graph_->replay();
  return outputs_;
}

}  // namespace ts::nn
