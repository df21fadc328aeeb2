// nn/geglu_mlp.cpp: the GeGLU MLP's three paths.
#include "nn/geglu_mlp.h"

#include <cmath>

#include "ops/ops.h"
#include "ops/registry.h"
#include "profiler/profiler.h"

namespace ts::nn {

MlpPath parse_mlp_path(std::string_view name) {
  if (name == "eager") return MlpPath::eager;
  if (name == "fused") return MlpPath::fused;
  if (name == "merged") return MlpPath::merged;
  if (name == "epilogue") return MlpPath::epilogue;
  fail("GeGLUMLP: unknown path '{}' (expected eager, fused, merged or epilogue)", name);
}

const char* mlp_path_name(MlpPath path) {
  switch (path) {
    case MlpPath::eager: return "eager";
    case MlpPath::fused: return "fused";
    case MlpPath::merged: return "merged";
    case MlpPath::epilogue: return "epilogue";
  }
  return "?";
}

int GeGLUMLP::kernels_per_forward(MlpPath path, bool one_gemm) {
  switch (path) {
    case MlpPath::eager: return 5;
    case MlpPath::fused: return 4;
    case MlpPath::merged: return 3;
    case MlpPath::epilogue: return one_gemm ? 2 : 3;  // else linear_geglu's composite: linear, then geglu
  }
  return 0;
}

bool GeGLUMLP::one_gemm_epilogue(Device device, std::string* why) {
  return gpu_meets_rung("linear_geglu/cuda/wgmma", device, why);
}

GeGLUMLP::GeGLUMLP(int64_t dim, int64_t hidden, MlpPath path, Options options, std::string name)
    : Module(std::move(name)),
      hidden_(hidden),
      path_(path),
      gate_up_weight_(uniform_parameter({2 * hidden, dim}, 1.0 / std::sqrt(static_cast<double>(dim)), options)),
      gate_(narrow(gate_up_weight_, 0, 0, hidden), Tensor{}),
      up_(narrow(gate_up_weight_, 0, hidden, hidden), Tensor{}),
      down_(hidden, dim, /*bias=*/false, options) {
  register_module("gate", gate_);
  register_module("up", up_);
  register_module("down", down_);
}

Tensor GeGLUMLP::forward(const Tensor& x) const {
  profiler::RecordFunction scope(name());
  switch (path_) {
    case MlpPath::eager:
      return down_.forward(mul(gelu(gate_.forward(x), GeluApprox::tanh), up_.forward(x)));
    case MlpPath::fused:
      return down_.forward(geglu(gate_.forward(x), up_.forward(x)));
    case MlpPath::merged: {
      // One GEMM for both projections: h = x [gate; up]^T is [*, 2*hidden]; its
      // halves are views (row stride 2*hidden) that the fused kernel reads in place.
      const Tensor h = linear(x, gate_up_weight_);
      const int64_t last = h.dim() - 1;
      return down_.forward(geglu(narrow(h, last, 0, hidden_), narrow(h, last, hidden_, hidden_)));
    }
    case MlpPath::epilogue:
      // One GEMM whose epilogue applies the GeGLU: per output tile it computes gate and up
      // from the two row blocks of [gate; up] and writes only gelu(gate) * up.
      return down_.forward(linear_geglu(x, gate_up_weight_));
  }
  return {};
}

}  // namespace ts::nn
