// nn/captured_step.h: a step of ops captured once into a CUDA graph, then one replay per call.
//
//   ts::nn::CapturedStep step([&](const std::vector<Tensor>& in) { return std::vector{mlp.forward(in[0])}; },
//                             {x});
//   const Tensor& y = step({x_next})[0];  // x_next copied into the captured input, one graph launch
//
// As PyTorch's torch.cuda.make_graphed_callables (forward only): the constructor runs the step once
// eagerly on the example inputs (first-use costs stay out of the graph), copies them into inputs of
// its own and captures the step on those (tensor/cuda_graph.h). Each call checks that its inputs
// have the captured shapes, dtypes and device (a graph replays fixed addresses and shapes, so any
// other is refused with a ts::Error that says which input differs), copies them in, replays, and
// returns the captured outputs, which the next call overwrites.
#pragma once

#include <functional>
#include <vector>

#include "tensor/cuda_graph.h"
#include "tensor/tensor.h"

namespace ts::nn {

class CapturedStep {
 public:
  using Step = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  CapturedStep(Step step, const std::vector<Tensor>& example_inputs);

  const std::vector<Tensor>& operator()(const std::vector<Tensor>& inputs);
  // One replay on the captured inputs as they hold (the same values as last time, or what the caller
  // wrote into inputs() itself): no copy, one graph launch.
  const std::vector<Tensor>& replay();

  const std::vector<Tensor>& inputs() const { return inputs_; }    // the captured inputs
  const std::vector<Tensor>& outputs() const { return outputs_; }  // what each replay writes
  const cuda::Graph& graph() const { return *graph_; }

 private:
  std::vector<Tensor> inputs_, outputs_;
  std::unique_ptr<cuda::Graph> graph_;  // destroyed first: the outputs stay valid while held
};

}  // namespace ts::nn
