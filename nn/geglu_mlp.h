// nn/geglu_mlp.h: the GeGLU MLP of part 2: down(gelu_tanh(gate(x)) * up(x)).
//
// Shapes: x [*, dim] -> [*, dim]; gate and up [hidden, dim], down [dim, hidden];
// no biases. Three ways to run the same function, chosen at construction or
// by name at run time (--path in tutorial 03):
//   eager   3 GEMMs + ts::gelu + ts::mul      5 kernels; the gelu result and the
//                                              [tokens, hidden] product round-trip memory
//   fused   3 GEMMs + ts::geglu                4 kernels; gelu and mul in one pass
//   merged  1 GEMM on [gate; up] + ts::geglu   3 kernels; gate and up read x once,
//           on the two halves + down GEMM      the fused kernel reads both halves in place
//   epilogue ts::linear_geglu + down GEMM      2 kernels on Hopper: gate and up computed per
//                                              output tile, gelu(gate)*up written from the GEMM's
//                                              registers; the [tokens, 2*hidden] product never
//                                              reaches memory (elsewhere: the merged path's 3)
// gate's and up's weights are the two row blocks of one [2*hidden, dim] tensor,
// so all three paths use the same parameters without a copy.
#pragma once

#include <string>
#include <string_view>

#include "nn/linear.h"

namespace ts::nn {

enum class MlpPath { eager, fused, merged, epilogue };
MlpPath parse_mlp_path(std::string_view name);  // "eager" | "fused" | "merged" | "epilogue"; throws ts::Error otherwise
const char* mlp_path_name(MlpPath path);

class GeGLUMLP : public Module {
 public:
  GeGLUMLP(int64_t dim, int64_t hidden, MlpPath path = MlpPath::eager, Options options = {},
           std::string name = "mlp_fwd");

  Tensor forward(const Tensor& x) const;

  MlpPath path() const { return path_; }
  void set_path(MlpPath path) { path_ = path; }
  // Kernels one forward launches on a GPU along a path: 5, 4, 3; the epilogue path 2 where
  // linear_geglu's one-GEMM rung runs (one_gemm_epilogue), 3 where its composite does.
  static int kernels_per_forward(MlpPath path, bool one_gemm = true);
  // Whether `device` runs linear_geglu's one-GEMM rung (its rung row: sm_90a); why not otherwise.
  static bool one_gemm_epilogue(Device device, std::string* why);

  const Linear& gate() const { return gate_; }
  const Linear& up() const { return up_; }
  const Linear& down() const { return down_; }
  const Tensor& gate_up_weight() const { return gate_up_weight_; }

 private:
  int64_t hidden_;
  MlpPath path_;
  Tensor gate_up_weight_;  // [2*hidden, dim]: gate's rows, then up's rows
  Linear gate_, up_, down_;
};

}  // namespace ts::nn
