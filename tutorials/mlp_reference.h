// tutorials/mlp_reference.h: the GeGLU MLP's float64 check, shared by tutorials 03 and 05.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <vector>

#include "nn/geglu_mlp.h"
#include "ops/ops.h"

namespace tutorial {

// Relative L2 error of `samples` output rows of y = mlp(x) (the first, the last and rows evenly
// between; samples >= 2) against the same MLP computed in double from its parameters.
inline double mlp_sampled_error(const ts::nn::GeGLUMLP& mlp, const ts::Tensor& x, const ts::Tensor& y, int64_t samples) {
  const std::vector<double> gu = mlp.gate_up_weight().to_vector<double>();  // [2H, D]: gate rows, then up rows
  const std::vector<double> dw = mlp.down().weight().to_vector<double>();   // [D, H]
  const int64_t dim = mlp.down().weight().size(0), hidden = mlp.down().weight().size(1);
  const ts::Tensor x2 = x.reshape({-1, dim}), y2 = y.reshape({-1, dim});
  const int64_t tokens = x2.size(0);
  const double c = std::sqrt(2.0 / std::numbers::pi);
  double diff2 = 0, ref2 = 0;
  for (int64_t sample = 0; sample < samples; ++sample) {
    const int64_t t = sample * (tokens - 1) / (samples - 1);
    const std::vector<double> xt = x2.select(0, t).to_vector<double>(), yt = y2.select(0, t).to_vector<double>();
    std::vector<double> h(static_cast<size_t>(hidden));
    for (int64_t j = 0; j < hidden; ++j) {
      double g = 0, u = 0;
      for (int64_t k = 0; k < dim; ++k) {
        g += xt[static_cast<size_t>(k)] * gu[static_cast<size_t>(j * dim + k)];
        u += xt[static_cast<size_t>(k)] * gu[static_cast<size_t>((hidden + j) * dim + k)];
      }
      h[static_cast<size_t>(j)] = 0.5 * g * (1 + std::tanh(c * (g + 0.044715 * g * g * g))) * u;
    }
    for (int64_t i = 0; i < dim; ++i) {
      double ref = 0;
      for (int64_t j = 0; j < hidden; ++j) ref += h[static_cast<size_t>(j)] * dw[static_cast<size_t>(i * hidden + j)];
      const double d = yt[static_cast<size_t>(i)] - ref;
      diff2 += d * d;
      ref2 += ref * ref;
    }
  }
  return std::sqrt(diff2 / ref2);
}

}  // namespace tutorial
