// tensor/print.cpp: Tensor::str(), PyTorch's print format.
//
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=ts.bfloat16)
// Rules as in torch/_tensor_str.py: 4 decimals; "1." style when every value
// is an integer; scientific when magnitudes span more than 1e3 or leave
// [1e-4, 1e8); values right-aligned to one width; more than 1000 elements
// are summarized with "..." keeping 3 items at each edge; dtype shown unless
// float32 (or int64), device unless cpu.
#include <cmath>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ts {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  enum class Mode { integer, fixed, scientific, boolean, int64 } mode = Mode::fixed;

  Formatter(const std::vector<double>& values, DType dtype) {
    if (dtype == DType::b8) { mode = Mode::boolean; return; }
    if (dtype == DType::i64) { mode = Mode::int64; return; }
    bool all_integer = true;
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      if (v != std::nearbyint(v)) all_integer = false;
      const double a = std::fabs(v);
      if (a == 0) continue;
      max_abs = std::max(max_abs, a);
      min_abs = std::min(min_abs, a);
    }
    if (all_integer) {
      mode = max_abs > 1e8 ? Mode::scientific : Mode::integer;
    } else if (max_abs > 0 && (max_abs / min_abs > 1000.0 || max_abs > 1e8 || min_abs < 1e-4)) {
      mode = Mode::scientific;
    }
  }

  std::string operator()(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    switch (mode) {
      case Mode::boolean: return v != 0 ? "True" : "False";
      case Mode::int64: return fmt::format("{}", static_cast<int64_t>(v));
      case Mode::integer: return fmt::format("{:.0f}.", v);
      case Mode::scientific: return fmt::format("{:.4e}", v);
      case Mode::fixed: break;
    }
    return fmt::format("{:.4f}", v);
  }
};

struct Printer {
  const std::vector<double>& values;  // row-major
  const Dims& shape;
  const Formatter& format;
  size_t width;
  bool summarize;

  // Prints the sub-tensor at `dim` starting at flat element `base`; indent is the column of its "[".
  void print(std::string& out, int dim, int64_t base, int indent) const {
    if (dim == shape.size()) {
      const std::string s = format(values[static_cast<size_t>(base)]);
      out.append(width - s.size(), ' ');
      out += s;
      return;
    }
    int64_t inner = 1;
    for (int d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t n = shape[dim];
    const bool last = dim == shape.size() - 1;
    // Between rows: a newline per remaining dim, then indentation past the "[" of this level.
    const std::string separator =
        last ? ", " : "," + std::string(static_cast<size_t>(shape.size() - dim - 1), '\n') +
                          std::string(static_cast<size_t>(indent + 1), ' ');
    out += '[';
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += "...";
        out += separator;
        i = n - kEdgeItems;
      }
      print(out, dim + 1, base + i * inner, indent + 1);
      if (i + 1 < n) out += separator;
    }
    out += ']';
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::vector<double> values = to_vector<double>();
  const bool summarize = numel() > kSummarizeAbove;
  const Formatter format(values, dtype_);

  // One width for every element shown (PyTorch measures all; so do we).
  size_t width = 1;
  for (double v : values) width = std::max(width, format(v).size());

  std::string out = "tensor(";
  if (dim() == 0) {
    out += format(values[0]);
  } else if (numel() == 0) {
    out += "[]";
  } else {
    Printer{values, shape_, format, width, summarize}.print(out, 0, 0, static_cast<int>(out.size()));
  }
  if (numel() == 0 && dim() > 1) out += fmt::format(", size={}", shape_);
  if (!device().is_cpu()) out += fmt::format(", device='{}'", device().str());
  if (dtype_ != DType::f32 && dtype_ != DType::i64 && dtype_ != DType::b8) out += fmt::format(", dtype={}", dtype_print_name(dtype_));
  out += ')';
  return out;
}

}  // namespace ts
